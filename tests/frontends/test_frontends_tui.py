"""The Textual TUI, driven headless through ``App.run_test()`` and the pilot."""

from __future__ import annotations

import asyncio
import functools
import io

import pytest
from pilot_waits import wait_for
from textual.widgets import Collapsible, DataTable, Input, Markdown, Select, Sparkline, Static, Switch

from localqwen.app import Workbench
from localqwen.plugin_api import events as ev
from localqwen.tui.app import LocalQwenApp
from localqwen.tui.event_view import EventView
from localqwen.tui.screens.action import ActionScreen
from localqwen.tui.widgets.chat_message import ChatMessage
from localqwen.tui.widgets.image_block import ImageBlock
from localqwen.tui.widgets.slider import Slider

SIZE = (130, 44)


def async_test(func):
    """Run an async test with asyncio (no pytest-asyncio plugin needed)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return asyncio.run(func(*args, **kwargs))

    return wrapper


async def home_ready(pilot, app) -> None:
    """The home screen paints from metadata first; wait until the plugins are loaded and checked
    against the machine (marks added then would move the buttons under a click)."""
    await wait_for(pilot, lambda: getattr(app.screen, "plugins", None) is not None
                   and app.screen.query(".action-button") and app.screen.fits is not None)
    await pilot.pause(0.3)  # let the recomposed layout settle before clicking


@pytest.fixture
def app(frontend_plugins, monkeypatch):
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    return LocalQwenApp(Workbench.create())


@async_test
async def test_home_lists_plugins_and_failures(app):
    async with app.run_test(size=SIZE) as pilot:
        await home_ready(pilot, app)
        assert app.screen.query_one("#action-testplug-echo")
        assert app.screen.query_one("#action-showcase-everything")
        failures = {w.id for w in app.screen.query(".plugin-failure")}
        assert {"failure-broken_import", "failure-broken_register"} <= failures
        text = str(app.screen.query_one("#failure-broken_register").render())
        assert "missing frobnicator" in text


@async_test
async def test_fill_form_run_and_see_streamed_output(app):
    async with app.run_test(size=SIZE) as pilot:
        await home_ready(pilot, app)
        app.screen.query_one("#action-testplug-echo").scroll_visible(animate=False)  # below the other cards
        await pilot.pause()
        await pilot.click("#action-testplug-echo")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ActionScreen)
        # Submitting without the required text shows the message beside the field.
        await pilot.click("#run")
        await pilot.pause()
        assert "required" in str(screen.query_one("#error-text").render()).lower()
        assert screen.query_one("#row-text").has_class("invalid")
        assert app.focused is screen.query_one("#field-text")  # the cursor waits in the wrong field
        # Fill the form through the widgets: type text, move the slider, flip the switch.
        await pilot.click("#field-text")
        await pilot.press(*"hello")
        screen.query_one("#field-repeat", Slider).focus()
        await pilot.press("right")
        await pilot.click("#field-shout")
        assert screen.query_one("#field-shout", Switch).value is True
        await pilot.click("#run")
        await wait_for(pilot, lambda: screen.event_view.done is not None)
        view = screen.event_view
        assert view.text[None] == "HELLO\nHELLO\nHELLO\n"
        assert view.done.status == "ok"
        assert str(screen.query_one("#error-text").render()) == ""
        assert view.query_one(DataTable).row_count == 3
        assert view.query(".file-written")
        markdown = view.query_one(".stream-text", Markdown)
        assert "HELLO" in markdown.source


@async_test
async def test_cancel_really_stops_the_work(app):
    async with app.run_test(size=SIZE) as pilot:
        app.open_action(app.bench.host.get("testplug"), "slow")
        await wait_for(pilot, lambda: isinstance(app.screen, ActionScreen) and app.screen.query("#run"))
        await pilot.pause(0.2)
        screen = app.screen
        screen.form_view.set_value("steps", 2000)
        screen.form_view.set_value("delay", 0.01)
        await pilot.click("#run")
        await wait_for(pilot, lambda: screen.job is not None and screen.job.progress)
        await pilot.click("#cancel")
        await wait_for(pilot, lambda: screen.event_view.done is not None)
        assert screen.event_view.done.status == "cancelled"
        marker = app.bench.paths.outputs_dir / "testplug" / "slow.state"
        assert marker.read_text().endswith("cancelled")
        assert int(marker.read_text().split()[0]) < 2000
        assert not screen.query_one("#run").disabled


@async_test
async def test_every_event_kind_renders(app):
    async with app.run_test(size=SIZE) as pilot:
        plugin = app.bench.host.get("showcase")
        app.open_action(plugin, "everything")
        await pilot.pause()
        screen = app.screen
        form = screen.form_view
        # Every widget kind is there.
        for name, kind in [("title", Input), ("mode", Select), ("enabled", Switch), ("temperature", Slider)]:
            assert isinstance(form.input_for(name), kind)
        assert form.input_for("tags").selected == ["red"]
        await pilot.click("#run")
        await wait_for(pilot, lambda: screen.event_view.done is not None)
        view: EventView = screen.event_view
        steps = view.query(".step-panel").results(Collapsible)
        assert [c.title for c in steps] == ["✓ Prepare (0.01s)"]
        assert "**demo**" in view.text["prepare"]
        assert view.query_one(ImageBlock).path.name == "gradient.png"
        assert view.query_one(Sparkline).data == [1.0, 0.5, 1 / 3]
        assert view.query(".tool-call") and view.query(".warning") and view.query(".event-log")
        assert "3/3 item" in str(view.query_one(".progress-detail").render())
        assert view.done.summary == "showcase finished"


@async_test
async def test_failure_is_shown_as_error(app):
    async with app.run_test(size=SIZE) as pilot:
        app.open_action(app.bench.host.get("testplug"), "fail")
        await pilot.pause()
        app.screen.form_view.set_value("message", "boom here")
        await pilot.click("#run")
        await wait_for(pilot, lambda: app.screen.event_view.done is not None)
        assert app.screen.event_view.errors == ["boom here"]
        assert app.screen.event_view.done.status == "failed"


@async_test
async def test_job_survives_closing_the_view_and_jobs_screen_reopens_it(app):
    async with app.run_test(size=SIZE) as pilot:
        app.open_action(app.bench.host.get("testplug"), "slow")
        await pilot.pause()
        screen = app.screen
        screen.form_view.set_value("steps", 30)
        screen.form_view.set_value("delay", 0.02)
        await pilot.click("#run")
        job = screen.job
        await pilot.press("escape")  # close the action view while the job runs
        await pilot.press("f4")
        await pilot.pause()
        table = app.screen.query_one("#jobs-table", DataTable)
        await wait_for(pilot, lambda: table.row_count == 1)
        assert job.wait(10) and job.status == "ok"
        await pilot.pause(0.6)  # the table refreshes twice a second
        assert "done" in str(table.get_row_at(0)[1])
        await pilot.press("enter")
        await pilot.pause()
        view = app.screen.query_one(EventView)
        await wait_for(pilot, lambda: view.done is not None)
        assert view.done.status == "ok"


@async_test
async def test_bespoke_view_and_command_palette(app):
    async with app.run_test(size=SIZE) as pilot:
        await home_ready(pilot, app)
        app.screen.query_one("#view-showcase").scroll_visible(animate=False)  # the home lists every plugin
        await pilot.pause()
        await pilot.click("#view-showcase")
        await pilot.pause()
        assert app.screen.query_one("#showcase-bespoke")
        await pilot.press("escape")
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Test plugin › Echo" in commands and "Chat" in commands


async def chat_ready(pilot, app, plugin_id: str) -> None:
    """The chat screen has loaded the plugins that chat and opened ``plugin_id``'s latest session.
    Opening ends by listing the sessions and focusing the input; the session is set before its
    messages and side panel are drawn, and the panel column appearing moves the buttons, so a click
    sent on the session alone could land where a button was (seen on a loaded machine)."""

    def opened() -> bool:
        screen = app.screen
        session_id = getattr(screen, "session_id", None)
        return (getattr(screen, "plugin_id", None) == plugin_id and session_id is not None
                and bool(screen.query(f"#session-{session_id}"))
                and screen.query_one("#chat-input", Input).has_focus)

    await wait_for(pilot, opened)
    await pilot.pause()  # the layout the opening changed is settled before any click
    await pilot.pause(0.1)


async def pick_chat_plugin(pilot, app, plugin_id: str) -> None:
    await wait_for(pilot, lambda: getattr(app.screen, "plugins", None) is not None)
    app.screen.query_one("#chat-plugin", Select).value = plugin_id
    await chat_ready(pilot, app, plugin_id)


@async_test
async def test_chat_renders_a_plugin_chat_with_no_frontend_code(app, tmp_path):
    """The ~40-line test plugin (tests/support/lq_chat_plugin.py): picked, streamed, shown again."""
    from lqf_showcase.plugin import write_png

    conversations = app.bench.conversations
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await chat_ready(pilot, app, "chat")  # the plain model chat comes first
        screen = app.screen
        chatting = [plugin.id for plugin in screen.plugins]
        assert chatting[0] == "chat" and "parrot" in chatting and "testplug" not in chatting
        await pick_chat_plugin(pilot, app, "parrot")
        await pilot.click("#chat-input")
        await pilot.press(*"hello there", "enter")
        await wait_for(pilot, lambda: not screen.busy and len(screen.query(".chat-message")) == 2)
        answer = screen.query(ChatMessage).last()
        assert answer.speaker == "Parrot" and answer.done.status == "ok"
        assert answer.text == "Polly says: hello there"
        steps = answer.query(".step-panel").results(Collapsible)
        assert [c.title for c in steps] == ["✓ Listening (0.01s)"]
        assert answer.body.text["listen"] == "Turn 1: 2 words heard."
        assert [c.title for c in answer.query(".tool-call").results(Collapsible)] == ["Tool call: lookup"]
        assert "0 earlier messages" in str(answer.query_one(".tool-call Contents Static").render())
        assert "done" in str(screen.query_one("#chat-status").render())
        session = screen.session_id
        assert conversations.store("parrot").metadata(session) == {"turns": 1}
        # The plugin's side panel shows the session's counter, asked again after the turn.
        panel = screen.query_one("#chat-panel")
        assert panel.display and "turns" in _rendered(panel) and "1" in _rendered(panel)
        # An image goes with the next message: shown in the question and in the answer (an Image event).
        picture = write_png(tmp_path / "square.png")
        screen.query_one("#chat-image").value = str(picture)
        screen.query_one("#chat-input", Input).value = "and this?"
        await pilot.click("#chat-send")
        await wait_for(pilot, lambda: not screen.busy and len(screen.query(".chat-message")) == 4)
        question, answer = list(screen.query(ChatMessage))[-2:]
        assert question.query(ImageBlock) and answer.query(ImageBlock)
        assert answer.body.text["listen"].startswith("Turn 2")
        # Regenerate answers the last question again instead of adding a second answer.
        await pilot.click("#chat-regenerate")
        await wait_for(pilot, lambda: not screen.busy and conversations.store("parrot").metadata(session) == {"turns": 3})
        assert len(conversations.entries("parrot", session)) == 4
        await pilot.click("#chat-copy")
        assert app.clipboard == "Polly says: and this?"
    # A restart opened on this plugin shows the history again, step panels and tool calls included.
    again = LocalQwenApp(Workbench.create())
    async with again.run_test(size=SIZE) as pilot:
        again.open_chat("parrot")
        await chat_ready(pilot, again, "parrot")
        assert again.screen.session_id == session
        await wait_for(pilot, lambda: len(again.screen.query(ChatMessage)) == 4
                       and again.screen.query(ChatMessage).last().done is not None)
        messages = list(again.screen.query(ChatMessage))
        assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
        assert [c.title for c in messages[1].query(".step-panel").results(Collapsible)] == ["✓ Listening (0.01s)"]
        assert messages[1].query(".tool-call") and messages[3].query(ImageBlock)
        assert messages[3].text == "Polly says: and this?"


def _rendered(container) -> str:
    """The plain text of everything a container's Static widgets show (Rich tables included)."""
    from rich.console import Console

    console = Console(width=60, record=True, file=io.StringIO())
    for widget in container.query(Static):
        console.print(widget.content)
    return console.export_text()


@async_test
async def test_chat_stop_keeps_the_partial_answer(app):
    async with app.run_test(size=SIZE) as pilot:
        app.open_chat("parrot")
        await chat_ready(pilot, app, "parrot")
        screen = app.screen
        screen.query_one("#chat-input", Input).value = "count 500"
        await pilot.click("#chat-send")
        # The answer's widget mounts a moment after the click; until then there is no last message.
        await wait_for(pilot, lambda: screen.query(ChatMessage)
                       and screen.query(ChatMessage).last().role == "assistant"
                       and len(screen.query(ChatMessage).last().text) > 10)
        await pilot.click("#chat-stop")
        await wait_for(pilot, lambda: not screen.busy)
        assert screen.query(ChatMessage).last().done.status == "cancelled"
        saved = app.bench.conversations.entries("parrot", screen.session_id)[-1].message["content"]
        assert saved.startswith("1 2 3") and 3 < len(saved.split()) < 500
        assert "cancelled" in str(screen.query_one("#chat-status").render())


@async_test
async def test_home_opens_a_plugin_chat_and_the_plain_chat_streams(app, monkeypatch):
    from scripted_engine import ScriptedEngine

    from localqwen.runtime.engine.base import ToolCall

    engine = ScriptedEngine("The answer is 42.", tool_calls=[ToolCall("calculator", {"x": 6, "y": 7})])
    monkeypatch.setattr(app.bench.services, "engine", lambda model=None, **kwargs: engine)
    async with app.run_test(size=SIZE) as pilot:
        await home_ready(pilot, app)
        app.screen.query_one("#chat-parrot").scroll_visible(animate=False)  # the home lists every plugin
        await pilot.pause()
        await pilot.click("#chat-parrot")
        await chat_ready(pilot, app, "parrot")
        await pick_chat_plugin(pilot, app, "chat")
        await pilot.click("#chat-input")
        await pilot.press(*"What is six times seven?", "enter")
        screen = app.screen
        await wait_for(pilot, lambda: not screen.busy and len(screen.query(".chat-message")) == 2)
        assert screen.query(ChatMessage).last().text == "The answer is 42."
        assert len(screen.query(".tool-call")) == 1
        assert "4 generated tokens" in str(screen.query_one("#chat-status").render())
        saved = app.bench.conversations.entries("chat", screen.session_id)[-1].message
        assert saved["content"] == "The answer is 42."
        assert saved["tool_calls"][0]["function"] == {"name": "calculator", "arguments": {"x": 6, "y": 7}}
        # Back home, another plugin's Chat button turns the open chat screen to that plugin.
        await pilot.press("f1")
        await home_ready(pilot, app)
        app.screen.query_one("#chat-parrot").scroll_visible(animate=False)
        await pilot.pause()
        await pilot.click("#chat-parrot")
        await chat_ready(pilot, app, "parrot")
        assert app.screen is screen and screen.query_one("#chat-plugin", Select).value == "parrot"


@async_test
async def test_language_switch_applies_at_once_and_is_saved(app):
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f5")
        await pilot.pause()
        app.screen.query_one("#language", Select).value = "zh"
        await pilot.pause(0.3)
        assert app.bench.config.app.language == "zh"
        assert 'language = "zh"' in app.bench.paths.config_file.read_text(encoding="utf-8")
        await pilot.press("f1")
        await home_ready(pilot, app)
        assert "插件" in str(app.screen.query(".section-title").first().render())
        descriptions = {b.binding.description for b in app.active_bindings.values() if b.binding.id == "nav.jobs"}
        assert descriptions == {"任务"}


@async_test
async def test_models_screen_shows_plan_catalog_and_saves_model_choice(app):
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        await wait_for(pilot, lambda: app.screen.query("#models-table")
                       and app.screen.query_one("#models-table", DataTable).row_count > 0)
        report = app.screen.query_one("#device-report", Markdown).source
        assert "RAM" in report and "qwen3-0.6b" in report
        table = app.screen.query_one("#models-table", DataTable)
        assert "gemma-3-270m-gguf" in [str(key.value) for key in table.rows]
        # the picker with its own parts mounted: a value set before its label exists cannot be shown
        await wait_for(pilot, lambda: app.screen.query("#model-for-testplug #label"))
        app.screen.query_one("#model-for-testplug", Select).value = "qwen3-0.6b"
        await wait_for(pilot, lambda: app.bench.config.plugin_section("testplug").get("model") == "qwen3-0.6b")


@async_test
async def test_models_screen_degrades_when_a_runtime_service_fails(app, monkeypatch):
    from localqwen.services import Services

    def broken(self):
        raise OSError("catalog unreadable")

    monkeypatch.setattr(Services, "models", property(broken))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        await wait_for(pilot, lambda: app.screen.query("#models-problem")
                       and "catalog unreadable" in str(app.screen.query_one("#models-problem").render()))


def test_event_batches_join_text(app):
    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            view = EventView()
            await app.screen.mount(view)
            await view.add_events([ev.TextDelta(text="a"), ev.TextDelta(text="b"), ev.Log(message="x"),
                                   ev.TextDelta(text="c")])
            await pilot.pause()
            assert view.text[None] == "abc"

    asyncio.run(scenario())
