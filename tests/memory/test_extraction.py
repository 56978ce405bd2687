"""Fact extraction: reply parsing, the retry -> raw-turn path on the real tiny Qwen3 (transformers,
no grammar), and the parse-fail -> constrained path on the real Gemma 270M GGUF (slow)."""

from __future__ import annotations

import pytest
from localqwen_memory.extraction import Extractor, FactsParseError, Turn, parse_facts
from localqwen_memory.prompts import Prompts, PromptsError
from localqwen_memory.store import MemoryStore

from localqwen.storage.database import Database


def test_parse_facts_tolerates_wrapping_and_names_the_problem():
    reply = '<think>x</think>```json\n{"facts": [{"fact": "The user has a cat.", "subject": "user"}]}\n```'
    assert parse_facts(reply)[0].fact == "The user has a cat."
    for bad, why in (("", "empty"), ("sure!", "no JSON"), ('{"facts": [', "invalid JSON"), ('{"x": 1}', "facts")):
        with pytest.raises(FactsParseError, match=why):
            parse_facts(bad)


def test_prompts_file_is_copied_and_checked(tmp_path):
    prompts = Prompts.load(tmp_path)
    path = tmp_path / "memory" / "prompts.yaml"
    assert path.is_file() and "{user}" in prompts.text("extraction", "turn")
    path.write_text("extraction:\n  turn: 'Say {nonsense}'\n", encoding="utf-8")
    with pytest.raises(PromptsError, match="nonsense"):
        Prompts.load(tmp_path)


def test_a_turn_without_an_answer_leaves_the_answer_line_out(tmp_path):
    # With "Assistant: (no answer)" in the prompt the real 1.5B model extracted nothing at all.
    extractor = Extractor(MemoryStore(Database(tmp_path / "m.sqlite3")), Prompts.load(), engine=None)
    alone = extractor.messages(Turn(user="My sister's name is Ann."))[1]["content"]
    assert "User: My sister's name is Ann." in alone and "Assistant" not in alone and "\x00" not in alone
    answered = extractor.messages(Turn(user="Hi, I am Ann.", assistant="Nice to meet you."))[1]["content"]
    assert "Assistant: Nice to meet you." in answered


def test_unparseable_reply_retries_then_keeps_the_raw_turn(tmp_path, tiny_qwen3_path):
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    engine = TransformersEngine(tiny_qwen3_path)
    outcome = Extractor(store, Prompts.load(), engine, max_new_tokens=16).extract(
        Turn(user="My sister Ann lives in Porto.", session_id=4, message_index=2))
    assert outcome.path == "raw" and len(outcome.failures) == 2 and outcome.raw.kind == "turn"
    assert outcome.raw.source == "session 4, message 2"
    counters = store.stats()["counters"]
    assert counters == {"extraction_parse_failed": 1, "extraction_failed": 1, "extraction_raw_fallback": 1}


@pytest.mark.slow
def test_parse_failure_is_retried_with_a_json_grammar(tmp_path, gemma_gguf_path):
    """What a 270M model writes varies, so the test checks what is guaranteed: the grammar makes the
    engine write the facts JSON even when the prompt asks for none, and an extraction whose first
    reply fails always takes the constrained retry (counted), never a silent drop."""
    from localqwen_memory.extraction import FACTS_SCHEMA

    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "prompts.yaml").write_text(
        "extraction:\n  system: 'Answer in one short English sentence, no JSON.'\n", encoding="utf-8")
    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    no_json = [{"role": "system", "content": "Answer in one short English sentence, no JSON."},
               {"role": "user", "content": "I adopted a cat named Miso."}]
    with LlamaCppEngine(gemma_gguf_path, n_ctx=1024, n_threads=2) as engine:
        assert engine.supports_structured_output
        constrained = engine.chat(no_json, settings=GenerationSettings(max_new_tokens=256, json_schema=FACTS_SCHEMA)).text
        assert constrained.lstrip().startswith("{")  # the grammar overrides the prompt
        outcome = Extractor(store, Prompts.load(tmp_path), engine, max_new_tokens=96).extract(
            Turn(user="I adopted a cat named Miso.", assistant="Lovely!"))
    counters = store.stats()["counters"]
    assert outcome.path in ("json", "constrained", "raw")
    if counters.get("extraction_parse_failed"):  # the first reply failed: the grammar retry ran
        assert counters.get("extraction_constrained", 0) + counters.get("extraction_failed", 0) == 1
    if outcome.path == "raw":  # nothing dropped: the raw turn is kept and the failure counted
        assert outcome.raw is not None and counters["extraction_raw_fallback"] == 1
