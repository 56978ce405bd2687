"""RAG as a chat: through ``Workbench.conversations`` (what every chat view calls) with the real
tiny Qwen3, the real MiniLM embeddings, LanceDB and the SQLite chat store.

One model is the tiny Qwen3 taught (``teach_reply``) to answer the tool turn of an imported
session with a native ``save_session_summary`` call, so the tool loop runs on a call a real model
generated; everything else runs on the random tiny model, whose replies take the agents' fallbacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from localqwen_rag import tools
from rag_helpers import docs_folder

from localqwen.app import Workbench
from localqwen.plugin_api import events
from localqwen.plugin_api.chat import plain_history

LEGACY_TURN = {"question": "What do statins do?", "answer": "They lower LDL cholesterol.", "topology": "single",
               "router_source": "rules"}
KEEP_A_COPY = "Please keep a copy of what we discussed"  # no keyword the fallback knows: only the model can call
TAUGHT_CALL = '<tool_call>\n{"name": "save_session_summary", "arguments": {"title": "Weekly notes"}}\n</tool_call>'


def workbench(tmp_path: Path, model: Path) -> Workbench:
    bench = Workbench.create()
    bench.paths.config_dir.mkdir(parents=True, exist_ok=True)
    bench.paths.config_file.write_text(f'[plugins.rag]\nallowed_roots = ["{tmp_path}"]\nmodel = "{model}"\n',
                                       encoding="utf-8")
    return Workbench.create()


def write_legacy_session(bench: Workbench, name: str, content: str) -> Path:
    folder = bench.paths.plugin_data_dir("rag") / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(content, encoding="utf-8")
    return path


def finished(collected) -> list[str]:
    return [e.step for e in collected if isinstance(e, events.Step) and e.status == "finished"]


@pytest.fixture(scope="module")
def taught_model(tmp_path_factory, tiny_qwen3_path):
    from localqwen.testing.tiny_models import teach_reply

    prompt = [{"role": "system", "content": tools.TOOL_SYSTEM},
              {"role": "user", "content": LEGACY_TURN["question"]},
              {"role": "assistant", "content": LEGACY_TURN["answer"]},
              {"role": "user", "content": KEEP_A_COPY}]
    schema = tools.session_summary_tool([], Path(".")).schema()
    return teach_reply(tiny_qwen3_path, tmp_path_factory.mktemp("rag_tool_model"), prompt, TAUGHT_CALL,
                       tools=[schema])


def test_rag_chat_keeps_choices_turns_and_panels_in_the_chat_store(tmp_path, tiny_qwen3_path):
    bench = workbench(tmp_path, tiny_qwen3_path)
    list(bench.run("rag", "add-documents", {"paths": [str(docs_folder(tmp_path))], "knowledge_base": "papers"}))
    talk = bench.conversations
    assert "rag" in [plugin.id for plugin in talk.plugins()]
    session = talk.new_session("rag", metadata={"knowledge_base": "papers", "topology": "centralized",
                                                "max_new_tokens": 16})

    collected = list(talk.send("rag", session, "Which drug prevents blood clots after a heart attack?"))
    done = collected[-1]
    assert done.status == "ok" and done.result["topology"] == "centralized"
    assert {"router", "planner", "manager", "knowledge", "responder", "reviewer"} <= set(finished(collected))
    assert "tools" not in finished(collected)  # the message asks for no tool: no tool turn
    passages = next(e for e in collected if isinstance(e, events.Table) and e.title == "Retrieved passages")
    assert any("aspirin.pdf" in str(row[1]) for row in passages.rows)
    # The answer (no step) is what the store keeps; the panels, the passages table and the grade's
    # reason (the tiny model's answer rests on nothing) are kept beside it.
    first = talk.entries("rag", session)[1]
    assert first.message["role"] == "assistant"
    assert first.message["content"] == "".join(e.text for e in collected if isinstance(e, events.TextDelta) and e.step is None)
    assert {"step", "table", "text", "warning"} <= {shown["kind"] for shown in first.display}
    assert done.summary.startswith("centralized: failure: ")
    assert any(shown.get("message", "").startswith("Not a grounded answer: ") for shown in first.display)
    metadata = talk.store("rag").metadata(session)
    assert metadata["knowledge_base"] == "papers" and metadata["k"] == 5 and metadata["rerank"] is False
    assert [(t["position"], t["topology"]) for t in metadata["turns"]] == [(0, "centralized")]
    assert metadata["turns"][0]["evidence"] and metadata["turns"][0]["plan"]

    # Choices change from the chat itself, checked like a form.
    assert list(talk.send("rag", session, "/set topology single"))[-1].status == "ok"
    refused = list(talk.send("rag", session, "/set k 100"))[-1]
    assert refused.status == "failed" and "k: Input should be less than or equal to 20" in refused.summary
    assert "no setting named 'colour'" in list(talk.send("rag", session, "/set colour blue"))[-1].summary
    shown = "".join(e.text for e in talk.send("rag", session, "/settings") if isinstance(e, events.TextDelta))
    assert "- topology = 'single'" in shown and "- k = 5" in shown

    done = list(talk.send("rag", session, "What is the most common side effect of statins?"))[-1]
    assert done.status == "ok" and done.result["topology"] == "single"
    messages = talk.store("rag").messages(session)
    second = max(i for i, m in enumerate(messages) if m["role"] == "user")
    positions = [t["position"] for t in talk.store("rag").metadata(session)["turns"]]
    assert positions == [0, second]
    # Regenerating answers the same message again: its turn record is replaced, not added.
    assert list(talk.regenerate("rag", session))[-1].status == "ok"
    assert [t["position"] for t in talk.store("rag").metadata(session)["turns"]] == [0, second]

    collected = list(talk.send("rag", session, "Please save this conversation as a summary report"))
    call = next(e for e in collected if isinstance(e, events.ToolCall))
    report = Path(call.result).read_text(encoding="utf-8")
    assert report.count("**Question:** What is the most common side effect of statins?") == 1
    assert "**Question:** Which drug prevents blood clots after a heart attack?" in report and "aspirin.pdf" in report
    assert "/set" not in report
    stored = talk.entries("rag", session)[-1]
    assert stored.message["content"] == f"Saved the session report to {call.result}"
    assert stored.message["tool_calls"][0]["function"]["name"] == "save_session_summary"
    assert "tool_call" in {shown["kind"] for shown in stored.display}


def test_a_taught_model_calls_the_tool_natively_in_an_imported_session(tmp_path, taught_model):
    bench = workbench(tmp_path, taught_model)
    legacy = write_legacy_session(bench, "weekly", json.dumps({"turns": [LEGACY_TURN]}))
    talk = bench.conversations
    # The first turn of any RAG session imports the old JSON sessions into the store.
    list(talk.send("rag", talk.new_session("rag"), "/settings"))
    imported = [s for s in talk.sessions("rag") if s.metadata.get("imported_from") == "weekly.json"]
    assert len(imported) == 1 and imported[0].title == LEGACY_TURN["question"]
    session = imported[0].id
    assert not legacy.exists() and legacy.with_name("weekly.json.imported").exists()

    collected = list(talk.send("rag", session, KEEP_A_COPY))
    call = next(e for e in collected if isinstance(e, events.ToolCall))
    assert call.name == "save_session_summary" and call.arguments == {"title": "Weekly notes"}
    tools_step = next(e for e in collected if isinstance(e, events.Step) and e.step == "tools" and e.status == "finished")
    assert "via native tool call" in tools_step.detail
    report = Path(call.result).read_text(encoding="utf-8")
    assert report.startswith("# Weekly notes") and "**Question:** What do statins do?" in report
    assert collected[-1].status == "ok" and collected[-1].result["report"] == call.result
    # The model's own words on the tool turn stay in the Tools panel, never in the answer.
    assert "<tool_call>" not in "".join(e.text for e in collected if isinstance(e, events.TextDelta))
    stored = talk.entries("rag", session)
    assert [e.message["role"] for e in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[-1].message["tool_calls"][0]["function"]["arguments"] == {"title": "Weekly notes"}

    list(talk.send("rag", talk.new_session("rag"), "/settings"))  # imported once only
    assert len([s for s in talk.sessions("rag") if s.metadata.get("imported_from") == "weekly.json"]) == 1


def test_legacy_import_is_idempotent_and_ask_continues_the_named_session(tmp_path, tiny_qwen3_path):
    bench = workbench(tmp_path, tiny_qwen3_path)
    good = write_legacy_session(bench, "project", json.dumps({"turns": [LEGACY_TURN]}))
    broken = write_legacy_session(bench, "broken", "{not json")
    collected = list(bench.run("rag", "ask", {"question": "save the conversation please", "session": "project",
                                              "max_new_tokens": 16}))
    assert collected[-1].status == "ok"
    warning = next(e for e in collected if isinstance(e, events.Warning))
    assert "could not import the RAG session file" in warning.message and "broken.json.unreadable" in warning.message
    assert broken.with_name("broken.json.unreadable").exists()
    report = next(e for e in collected if isinstance(e, events.FileWritten)).path
    assert "**Question:** What do statins do?" in Path(report).read_text(encoding="utf-8")

    # A crash between storing and renaming leaves a file the store already holds: it is not imported twice.
    imported = good.with_name("project.json.imported")
    good.write_text(imported.read_text(encoding="utf-8"), encoding="utf-8")
    list(bench.run("rag", "ask", {"question": "hello", "session": "project", "tools": False, "max_new_tokens": 16}))
    talk = bench.conversations
    sessions = [s for s in talk.sessions("rag") if s.metadata.get("session_name") == "project"]
    assert len(sessions) == 1 and not good.exists()
    messages = talk.store("rag").messages(sessions[0].id)
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        "What do statins do?", "save the conversation please", "hello"]
    assert sessions[0].metadata["tools"] is False  # the ask form's choices are the session's now


def test_plain_history_leaves_out_commands_images_and_tool_records():
    history = [
        {"role": "user", "content": "/set topology single"},
        {"role": "assistant", "content": "topology = 'single'"},
        {"role": "user", "content": [{"type": "image", "image": "/x/pill.png"}, {"type": "text", "text": "What is it?"}]},
        {"role": "assistant", "content": "A pill.",
         "tool_calls": [{"type": "function", "function": {"name": "save_session_summary", "arguments": {}}}]},
        {"role": "user", "content": [{"type": "image", "image": "/x/pill.png"}]},
        {"role": "assistant", "content": ""},
    ]
    assert plain_history(history, keep=6, image_note="(an image)") == [{"role": "user", "content": "What is it?"},
                                      {"role": "assistant", "content": "A pill."},
                                      {"role": "user", "content": "(an image)"}]
    assert plain_history(history)[-1] == {"role": "assistant", "content": "A pill."}  # no note: left out
    many = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(10)]
    assert [m["content"] for m in plain_history(many, keep=6)] == ["m4", "m5", "m6", "m7", "m8", "m9"]
