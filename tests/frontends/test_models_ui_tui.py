"""Issue 17 in the TUI, through the Textual pilot: focus on open, F1 home, an empty Enter ignored,
generation settings and "which model answers" in the chat (a real tiny Qwen3 through
transformers), per-plugin model pickers with hub-cache models and a picked folder, and the
knowledge base offered as a list."""

from __future__ import annotations

import asyncio
import functools
import os

import pytest
from pilot_waits import wait_for
from textual.widgets import Input, Select, Static

from localqwen.app import Workbench
from localqwen.tui.app import LocalQwenApp
from localqwen.tui.screens.action import ActionScreen
from localqwen.tui.screens.home import HomeScreen
from localqwen.tui.widgets.chat_message import ChatMessage
from localqwen.tui.widgets.path_picker import PathPickerScreen

SIZE = (130, 44)


def async_test(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return asyncio.run(func(*args, **kwargs))

    return wrapper


def notifications(app) -> list[str]:
    return [str(notification.message) for notification in app._notifications]


@pytest.fixture
def app(frontend_plugins, monkeypatch):
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    return LocalQwenApp(Workbench.create())


@async_test
async def test_forms_focus_their_first_field_f1_goes_home_and_knowledge_bases_are_a_list(app):
    app.bench.services.retrieval.create("notes")
    async with app.run_test(size=SIZE) as pilot:
        app.open_action(app.bench.host.get("testplug"), "echo")
        await wait_for(pilot, lambda: isinstance(app.screen, ActionScreen) and app.screen.query("FormView"))
        await pilot.pause(0.1)
        assert app.focused is not None and app.focused.id == "field-text"
        await pilot.press(*"typed at once")  # no click first: the keys land in the field
        assert app.screen.form_view.values()["text"] == "typed at once"
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
        await pilot.press("f1")  # already home: stays there
        assert isinstance(app.screen, HomeScreen) and len(app.screen_stack) == 1
        # The knowledge base: a list of the ones that exist (was a text box).
        app.open_action(app.bench.host.get("rag"), "search")
        await wait_for(pilot, lambda: isinstance(app.screen, ActionScreen) and app.screen.query("FormView"))
        field = app.screen.form_view.input_for("knowledge_base")
        assert isinstance(field, Select)
        listed = lambda: [value for _label, value in field._options if isinstance(value, str)]  # noqa: E731
        try:
            await wait_for(pilot, lambda: listed() == ["default", "notes"], timeout=20)
        except AssertionError:
            raise AssertionError(f"{field._options} {notifications(app)}") from None
        assert field.value == "default"
        field.value = "notes"
        assert app.screen.form_view.values()["knowledge_base"] == "notes"


@pytest.mark.slow  # a real model load and generation (~25 s here)
@async_test
async def test_chat_focus_empty_enter_generation_settings_and_the_answering_model(app, tiny_qwen3_path):
    app.bench.set_config("plugins.chat", "model", str(tiny_qwen3_path))
    conversations = app.bench.conversations
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await wait_for(pilot, lambda: getattr(app.screen, "plugin_id", None) == "chat"
                       and app.screen.session_id is not None)
        await pilot.pause(0.1)
        screen = app.screen
        assert app.focused is screen.query_one("#chat-input", Input)
        sessions_before = [s.id for s in conversations.sessions("chat")]
        await pilot.press("enter")  # nothing typed: nothing sent, no session made
        await pilot.pause(0.2)
        assert [s.id for s in conversations.sessions("chat")] == sessions_before
        assert conversations.entries("chat", screen.session_id) == [] and not screen.busy
        # A setting out of bounds is refused before anything is stored.
        screen.query_one("#chat-temperature", Input).value = "9"
        await pilot.press(*"hello", "enter")
        await pilot.pause(0.2)
        assert any("temperature must be from 0 to 2" in text for text in notifications(app))
        assert conversations.entries("chat", screen.session_id) == []
        screen.query_one("#chat-temperature", Input).value = ""
        screen.query_one("#chat-max-tokens", Input).value = "3"
        await pilot.press("enter")  # the message is still in the box
        await wait_for(pilot, lambda: not screen.busy and len(screen.query(ChatMessage)) == 2, timeout=120)
        status = str(screen.query_one("#chat-status", Static).render())
        assert "3 generated tokens" in status  # the engine got max_new_tokens=3
        assert f"by {tiny_qwen3_path.name} (transformers, cpu)" in status
        answer = screen.query(ChatMessage).last()
        assert "Model:" not in str([str(w.render()) for w in answer.query(Static)])  # not in the answer itself


def _hf_cache_with(cache, repo: str, folder) -> None:
    """``folder`` laid out in Hugging Face's cache (blobs + snapshot links + refs/main)."""
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / "rev1"
    snapshot.mkdir(parents=True)
    (repo_dir / "blobs").mkdir()
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text("rev1")
    for index, file in enumerate(p for p in folder.iterdir() if p.is_file()):
        blob = repo_dir / "blobs" / f"b{index}"
        os.symlink(file.resolve(), blob)
        os.symlink(blob, snapshot / file.name)


@pytest.mark.slow  # the models screen probes the machine (~25 s here)
@async_test
async def test_model_pickers_offer_hub_cache_models_and_a_picked_folder(app, tiny_qwen3_path, tmp_path, monkeypatch):
    cache = tmp_path / "hf"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("MODELSCOPE_CACHE", str(tmp_path / "ms"))
    _hf_cache_with(cache, "someone/tiny-chat", tiny_qwen3_path)
    async with app.run_test(size=(150, 50)) as pilot:
        await pilot.press("f3")
        await wait_for(pilot, lambda: app.screen.query("#model-for-chat #label"))  # its own parts mounted too
        picker = app.screen.query_one("#model-for-chat", Select)
        values = [value for _label, value in picker._options]
        assert "qwen3-0.6b" in values  # the catalog
        cached = next(v for v in values if "models--someone--tiny-chat" in str(v))  # the hub cache
        picker.value = cached
        await wait_for(pilot, lambda: app.bench.config.plugin_section("chat").get("model") == cached)
        # "…" opens the path picker; a folder that is not a model is refused, with why. The rows mount
        # one after another: on a busy machine the captioner's may not be there yet.
        await wait_for(pilot, lambda: app.screen.query("#model-path-captioner"))
        app.screen.query_one("#model-path-captioner").press()
        await wait_for(pilot, lambda: isinstance(app.screen, PathPickerScreen))
        empty = tmp_path / "not-a-model"
        empty.mkdir()
        app.screen.dismiss(str(empty))
        await wait_for(pilot, lambda: any("has no config.json" in text for text in notifications(app)))
        assert app.bench.config.plugin_section("captioner").get("model", "") == ""
        # A real model folder is saved and becomes the picker's value.
        app.screen.query_one("#model-path-captioner").press()
        await wait_for(pilot, lambda: isinstance(app.screen, PathPickerScreen))
        app.screen.dismiss(str(tiny_qwen3_path))
        await wait_for(pilot, lambda: app.bench.config.plugin_section("captioner").get("model") == str(tiny_qwen3_path))
        assert app.screen.query_one("#model-for-captioner", Select).value == str(tiny_qwen3_path)
        text = app.bench.paths.config_file.read_text()
        assert "[plugins.captioner]" in text and str(tiny_qwen3_path) in text
        # A model downloading already (its lock held, as the web view's or the CLI's would be) is said
        # at once, and no second job starts.
        from textual.widgets import DataTable

        from localqwen.storage.file_lock import FileLock

        table = app.screen.query_one("#models-table", DataTable)
        table.move_cursor(row=table.get_row_index("qwen3-0.6b"))
        busy = FileLock(app.bench.paths.models_dir / ".downloading" / "huggingface_qwen3-0.6b.lock")
        assert busy.acquire(blocking=False)
        try:
            jobs_before = len(app.bench.services.jobs.list())
            app.screen.query_one("#models-download").press()
            await wait_for(pilot, lambda: any("qwen3-0.6b is already downloading (pid" in text
                                              for text in notifications(app)))
            assert len(app.bench.services.jobs.list()) == jobs_before
        finally:
            busy.release()
