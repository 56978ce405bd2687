"""Image questions go to the vision model; the plugin's actions run through the real entry point."""

from __future__ import annotations

from pathlib import Path

from rag_helpers import docs_folder

from localqwen.app import Workbench
from localqwen.plugin_api import events


def test_image_question_goes_to_the_vision_model(tmp_path, tiny_qwen3_path, tiny_qwen3_vl_path):
    from localqwen_rag.agents.knowledge import KnowledgeSettings
    from localqwen_rag.agents.llm import LLM
    from localqwen_rag.pipeline import PipelineDeps, Question, run_question
    from localqwen_rag.trajectory import TrajectoryLog
    from PIL import Image

    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    image = tmp_path / "pill.png"
    Image.new("RGB", (32, 32), (200, 30, 30)).save(image)
    text_engine, vision_engine = TransformersEngine(tiny_qwen3_path), TransformersEngine(tiny_qwen3_vl_path)
    assert vision_engine.supports_images
    vision = LLM(vision_engine, max_new_tokens=8)
    deps = PipelineDeps(llm=LLM(text_engine, max_new_tokens=8), vision_llm=lambda: vision, kb=None,
                        knowledge=KnowledgeSettings(), log=TrajectoryLog(tmp_path / "t"), reports_dir=tmp_path / "r",
                        turns=[])
    collected = list(run_question(Question("What colour is this pill?", use_kb=False, image=str(image)), deps))
    assert collected[-1].result["topology"] == "single"
    user = vision.last_messages[-1]["content"]
    assert user[0] == {"type": "image", "image": str(image)} and "What colour" in user[1]["text"]
    assert TrajectoryLog(tmp_path / "t").read()[0]["has_image"] is True


def test_plugin_actions_through_the_workbench(tmp_path, monkeypatch):
    folder = docs_folder(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("not allowed", encoding="utf-8")
    config_file = tmp_path.parent / "lq_config.toml"
    config_file.write_text(f'[plugins.rag]\nallowed_roots = ["{tmp_path}"]\n', encoding="utf-8")
    workbench = Workbench.create()
    workbench.paths.config_dir.mkdir(parents=True, exist_ok=True)
    workbench.paths.config_file.write_text(config_file.read_text(), encoding="utf-8")
    workbench = Workbench.create()
    assert "rag" in [info.name for info in workbench.host.available()]

    collected = list(workbench.run("rag", "add-documents", {"paths": [str(folder), str(outside)],
                                                           "knowledge_base": "papers"}))
    errors = [e for e in collected if isinstance(e, events.Error)]
    assert len(errors) == 1 and "outside the allowed folders" in errors[0].message
    assert collected[-1].status == "ok" and len(collected[-1].result["added"]) == 3

    done = list(workbench.run("rag", "search", {"query": "blood clots", "knowledge_base": "papers", "k": 2}))[-1]
    assert len(done.result["hits"]) == 2
    # The plugin names its reranker itself; with none configured, rerank is a clear form error.
    refused = list(workbench.run("rag", "search", {"query": "blood clots", "knowledge_base": "papers", "rerank": True}))
    assert refused[-1].status == "failed" and refused[0].field == "rerank" and "[plugins.rag] reranker" in refused[0].message
    listed = list(workbench.run("rag", "knowledge-bases", {"operation": "list"}))
    assert listed[-1].result["knowledge_bases"] == ["papers"]
    renamed = list(workbench.run("rag", "knowledge-bases", {"operation": "rename", "name": "papers",
                                                            "new_name": "articles"}))
    assert renamed[-1].result["knowledge_bases"] == ["articles"]
    missing = list(workbench.run("rag", "knowledge-bases", {"operation": "delete", "name": "nope"}))
    assert missing[-1].status == "failed" and "no knowledge base named 'nope'" in missing[-1].summary
    exported = list(workbench.run("rag", "export-router-data", {}))
    assert exported[-1].result["trajectories"] == 0 and len([e for e in exported if isinstance(e, events.FileWritten)]) == 2


def test_ask_action_end_to_end(tmp_path, tiny_qwen3_path):
    folder = docs_folder(tmp_path)
    workbench = Workbench.create()
    workbench.paths.config_dir.mkdir(parents=True, exist_ok=True)
    workbench.paths.config_file.write_text(
        f'[plugins.rag]\nallowed_roots = ["{tmp_path}"]\nmodel = "{tiny_qwen3_path}"\n', encoding="utf-8")
    workbench = Workbench.create()
    list(workbench.run("rag", "add-documents", {"paths": [str(folder)]}))
    collected = list(workbench.run("rag", "ask", {"question": "Which drug prevents blood clots?",
                                                  "topology": "centralized", "max_new_tokens": 16}))
    done = collected[-1]
    # The tiny model's answer rests on nothing: the ask action (what `localqwen run rag ask` runs)
    # ends failed, with the reason, so a script sees it (exit status 1).
    assert done.status == "failed" and done.result["topology"] == "centralized"
    assert done.summary == "centralized: failure: " + "; ".join(done.result["outcome_reasons"])
    panels = [e.step for e in collected if isinstance(e, events.Step) and e.status == "finished"]
    assert {"router", "planner", "manager", "knowledge", "responder", "reviewer"} <= set(panels)
    assert any(isinstance(e, events.Table) and e.title == "Retrieved passages" for e in collected)
    saved = list(workbench.run("rag", "ask", {"question": "save the conversation please", "max_new_tokens": 16}))
    report = next(e for e in saved if isinstance(e, events.FileWritten)).path
    assert "Which drug prevents blood clots?" in Path(report).read_text(encoding="utf-8")
    # Both turns went into the "default" session of the chat store, where every chat view shows them.
    [session] = workbench.conversations.sessions("rag")
    assert session.metadata["session_name"] == "default" and session.message_count == 4
    assert session.title == "Which drug prevents blood clots?"
    shown = workbench.conversations.entries("rag", session.id)[1].display
    assert {"step", "table"} <= {d["kind"] for d in shown}
    panel_text = [d["step"] for d in shown if d["kind"] == "text"]  # each panel's streamed text, joined
    assert "responder" in panel_text and len(panel_text) == len(set(panel_text))
    shown = workbench.conversations.entries("rag", session.id)[3].display  # the save turn had the tool turn
    assert "tools" in [d["step"] for d in shown if d["kind"] == "text"]


def test_ask_waits_its_turn_when_the_session_is_answering(tmp_path):
    """The ask action stores into the chat session the chat tab may be answering in: refused, nothing
    stored, and the copy of its image in the uploads folder removed (no message will show it)."""
    from localqwen_rag.sessions import named_session
    from PIL import Image

    workbench = Workbench.create()
    chats = workbench.services.chats.for_plugin("rag")
    session = named_session(chats, "default")
    Image.new("RGB", (8, 8), "red").save(tmp_path / "scan.png")
    assert chats.claim_turn(session)  # the chat tab answering in this session
    refused = list(workbench.run("rag", "ask", {"question": "Which drug prevents blood clots?",
                                                "image": str(tmp_path / "scan.png")}))
    assert refused[-1].status == "failed" and "still answering" in refused[-1].summary
    assert chats.messages(session) == []
    uploads = workbench.paths.uploads_dir
    assert not uploads.exists() or [p for p in uploads.rglob("*") if p.is_file()] == []
    chats.release_turn(session)
    assert not workbench.conversations.answering(session)
