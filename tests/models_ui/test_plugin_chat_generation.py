"""The chat views' per-turn generation settings (max tokens, temperature) reach the answers of the
RAG and medical chats, through ``Workbench.conversations`` (what the TUI and web chat views call),
with the real tiny Qwen3 (random weights: it never stops by itself within a few tokens, so a
length limit shows as exactly that many completion tokens)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localqwen.app import Workbench
from localqwen.plugin_api import events


def workbench(section: str, model: Path) -> Workbench:
    bench = Workbench.create()
    bench.paths.config_dir.mkdir(parents=True, exist_ok=True)
    bench.paths.config_file.write_text(f'[plugins.{section}]\nmodel = "{model}"\n', encoding="utf-8")
    return Workbench.create()


def step_text(said: list, step: str) -> str:
    return "".join(e.text for e in said if isinstance(e, events.TextDelta) and e.step == step)


def test_rag_chat_answer_takes_max_tokens_and_temperature_from_the_chat_view(tiny_qwen3_path):
    talk = workbench("rag", tiny_qwen3_path).conversations
    # No knowledge base and the single topology: the Responder is the turn's one model call.
    session = talk.new_session("rag", metadata={"use_kb": False, "topology": "single"})

    greedy = list(talk.send("rag", session, "What do statins do?", generation={"max_new_tokens": 3}))
    done = greedy[-1]
    assert done.status == "ok", done.summary
    assert done.result["completion_tokens"] == 3 and done.result["finish_reason"] == "length"
    assert done.result["answered_by"].startswith(tiny_qwen3_path.name)
    # The per-turn setting is not kept as the session's choice (the session's default stays 96).
    assert talk.store("rag").metadata(session)["max_new_tokens"] == 96

    hot = list(talk.regenerate("rag", session, generation={"max_new_tokens": 5, "temperature": 2.0}))
    assert hot[-1].result["completion_tokens"] == 5
    # Sampled at temperature 2 the random model says something else than its greedy choice.
    assert step_text(hot, "responder")[:len(step_text(greedy, "responder"))] != step_text(greedy, "responder")


@pytest.mark.slow  # ~15-25 s here: a medical turn also runs the 256-token profile extraction
def test_medical_chat_reply_takes_max_tokens_and_temperature_from_the_chat_view(tiny_qwen3_path):
    from localqwen_medical.chat import ModelLLM

    bench = workbench("medical", tiny_qwen3_path)
    talk = bench.conversations
    session = talk.new_session("medical", metadata={"use_kb": False})
    # One turn only: each medical turn also runs the model's 256-token profile extraction.
    said = list(talk.send("medical", session, "Hello there, how are you today?", generation={"max_new_tokens": 3}))
    done = said[-1]
    assert done.status == "ok" and done.result["intent"] == "chat", done.result
    assert done.result["completion_tokens"] == 3 and done.result["finish_reason"] == "length"
    assert talk.store("medical").metadata(session)["max_new_tokens"] == 384  # the session's own choice stays

    # The door the turn used, on the engine it loaded: the temperature changes the reply the user
    # reads, while the router's and rewriter's structured call stays greedy whatever it is.
    engine = bench.context("medical").engine(str(tiny_qwen3_path), task="text")
    greedy, hot = ModelLLM(engine, max_new_tokens=4), ModelLLM(engine, max_new_tokens=4, temperature=2.0)
    asked = [{"role": "user", "content": "Hello there"}]
    assert hot.chat(asked).text != greedy.chat(asked).text and hot.last_result.completion_tokens == 4
    assert hot.complete("Route this.", "Hello there") == greedy.complete("Route this.", "Hello there")
