"""Chat with any plugin that offers one: a plugin picker and its sessions on the left, the
conversation on the right, answers streamed with their step panels, tool calls, images and tables.

Everything goes through ``bench.conversations``; this screen knows nothing about any plugin. The
answer is generated in a thread and the screen takes what has arrived a few times a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from rich.table import Table as RichTable
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Input, Label, ListItem, ListView, Select, Static

from localqwen.chat_replay import message_events
from localqwen.i18n import t
from localqwen.jobs import paced, run_in_background
from localqwen.plugin_api import CancelToken, Plugin
from localqwen.plugin_api import events as ev
from localqwen.plugin_api.runner import MODEL_LINE_PREFIX
from localqwen.storage.chat_store import message_text
from localqwen.tui.screens.base import BaseScreen
from localqwen.tui.widgets.app_header import AppHeader
from localqwen.tui.widgets.chat_message import ChatMessage
from localqwen.tui.widgets.path_picker import PathInput

UI_INTERVAL_S = 0.2  # five repaints a second: smooth enough, and leaves the CPU to the model


class ChatScreen(BaseScreen):
    BINDINGS = [
        Binding("ctrl+n", "new_session", "New chat", id="chat.new"),
        Binding("ctrl+k", "stop", "Stop", id="chat.stop"),
        Binding("ctrl+g", "regenerate", "Regenerate", id="chat.regenerate"),
        Binding("ctrl+l", "clear", "Clear", id="chat.clear"),
        Binding("ctrl+y", "copy", "Copy", id="chat.copy"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.plugins: list[Plugin] | None = None  # loaded in a worker: importing plugins takes time
        self.plugin_id: str | None = None
        self.session_id: int | None = None
        self.cancel: CancelToken | None = None
        self.busy = False
        self._showing = asyncio.Lock()
        self._listing = asyncio.Lock()

    @property
    def conversations(self) -> Any:
        return self.app.bench.conversations  # type: ignore[attr-defined]

    @property
    def speaker(self) -> str:
        titles = {plugin.id: plugin.title for plugin in self.plugins or []}
        return titles.get(self.plugin_id or "", t("chat.role_assistant"))

    def compose(self) -> ComposeResult:
        yield AppHeader()
        with Horizontal(id="chat-layout"):
            with Vertical(id="chat-sidebar"):
                yield Label(t("chat.plugin"), classes="field-label")
                yield Select([], prompt=t("home.loading"), id="chat-plugin")
                yield Button(t("chat.new"), id="chat-new", variant="primary")
                yield ListView(id="chat-sessions")
            with Vertical(id="chat-main"):
                yield VerticalScroll(id="chat-messages")
                yield Static("", id="chat-status", classes="muted")
                with Horizontal(id="chat-input-row"):
                    yield Input(placeholder=t("chat.placeholder"), id="chat-input")
                    yield PathInput(placeholder=t("chat.attach_placeholder"), id="chat-image")
                    yield Button(t("chat.send"), id="chat-send", variant="primary")
                with Horizontal(classes="buttons"):
                    yield Button(t("chat.stop"), id="chat-stop", variant="error", disabled=True)
                    yield Button(t("chat.regenerate"), id="chat-regenerate")
                    yield Button(t("chat.clear"), id="chat-clear")
                    yield Button(t("chat.copy"), id="chat-copy")
                # Generation settings for the next answers; empty = the plugin's own default.
                with Horizontal(id="chat-generation"):
                    yield Label(t("chat.max_tokens"), classes="field-label")
                    yield Input(placeholder=t("chat.max_tokens_placeholder"), type="integer", id="chat-max-tokens")
                    yield Label(t("chat.temperature"), classes="field-label")
                    yield Input(placeholder=t("chat.temperature_placeholder"), type="number", id="chat-temperature")
            # The plugin's side panel (a patient profile, recalled memories): hidden when it has none.
            yield VerticalScroll(id="chat-panel")
        yield Footer()

    def on_mount(self) -> None:
        self._load_plugins()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if self.plugin_id is not None:
            self.query_one("#chat-input", Input).focus()
        wanted = getattr(self.app, "chat_plugin", None)  # set by "open this plugin's chat"
        # Only once a plugin is open: the first load opens the wanted one itself.
        if self.plugin_id is not None and wanted and wanted != self.plugin_id and not self.busy:
            self.query_one("#chat-plugin", Select).value = wanted

    @work(thread=True, exclusive=True, group="chat-plugins")
    def _load_plugins(self) -> None:
        plugins = self.conversations.plugins()
        self.app.call_from_thread(self._show_plugins, plugins)

    async def _show_plugins(self, plugins: list[Plugin]) -> None:
        self.plugins = plugins
        picker = self.query_one("#chat-plugin", Select)
        picker.prompt = t("chat.plugin")
        picker.set_options([(plugin.title, plugin.id) for plugin in plugins])
        if not plugins:
            self.query_one("#chat-status", Static).update(Text(t("chat.no_plugins")))
            self.query_one("#chat-input", Input).disabled = True
            return
        wanted = getattr(self.app, "chat_plugin", None)
        first = wanted if wanted in {p.id for p in plugins} else plugins[0].id
        await self.open_plugin(first)
        picker.value = first  # its Changed message finds the plugin already open

    # -- plugins and sessions ------------------------------------------------------------------
    async def open_plugin(self, plugin_id: str, session_id: int | None = None) -> None:
        session_id = session_id or self.conversations.latest_or_new_session(plugin_id)
        self.app.chat_plugin = plugin_id  # type: ignore[attr-defined]
        self.query_one("#chat-status", Static).update("")
        await self.show_session(session_id, plugin_id)
        await self.refresh_sessions()
        self.query_one("#chat-input", Input).focus()  # the first keys typed go into the message

    @on(Select.Changed, "#chat-plugin")
    async def _pick_plugin(self, event: Select.Changed) -> None:
        if event.value is Select.NULL or event.value == self.plugin_id:
            return
        if self.busy:  # one answer at a time: put the picker back
            event.select.value = self.plugin_id
            return
        await self.open_plugin(str(event.value))

    async def refresh_sessions(self) -> None:
        if self.plugin_id is None:
            return
        async with self._listing:  # refreshes may overlap (a new session while an answer ends)
            view = self.query_one("#chat-sessions", ListView)
            await view.clear()
            for info in self.conversations.sessions(self.plugin_id):
                label = info.title or t("chat.untitled")
                await view.append(ListItem(Static(label, markup=False), id=f"session-{info.id}"))
                if info.id == self.session_id:
                    view.index = len(view.children) - 1

    async def show_session(self, session_id: int, plugin_id: str | None = None, entries: list[Any] | None = None
                           ) -> None:
        """Show one session (of ``plugin_id``, default the current plugin): ``entries``, or the stored ones."""
        plugin_id = plugin_id or self.plugin_id
        if plugin_id is None:
            return
        async with self._showing:  # one rebuild at a time: a second one would remove half-drawn messages
            if entries is None:
                entries = self.conversations.entries(plugin_id, session_id)
            self.plugin_id, self.session_id = plugin_id, session_id
            box = self.query_one("#chat-messages", VerticalScroll)
            await box.remove_children()
            for entry in entries:
                events = message_events(entry)
                if events:
                    role = entry.message["role"]
                    message = ChatMessage(role, self._speaker_for(role))
                    await box.mount(message)
                    await message.replay(events)
            box.scroll_end(animate=False)
        await self.refresh_panel()

    async def refresh_panel(self) -> None:
        """Ask the plugin for its side panel of this session and show it (or hide the column)."""
        panel = self.query_one("#chat-panel", VerticalScroll)
        tables = []
        if self.plugin_id is not None and self.session_id is not None:
            tables = self.conversations.panel(self.plugin_id, self.session_id)
        await panel.remove_children()
        panel.display = bool(tables)
        for table in tables:
            await panel.mount(Static(panel_table(table), classes="chat-panel-table"))

    def _speaker_for(self, role: str) -> str:
        return self.speaker if role == "assistant" else t(f"chat.role_{role}")

    @on(ListView.Selected, "#chat-sessions")
    async def _pick_session(self, event: ListView.Selected) -> None:
        if self.busy or event.item is None or not event.item.id:
            return
        await self.show_session(int(event.item.id.removeprefix("session-")))

    # -- actions -------------------------------------------------------------------------------
    @on(Button.Pressed, "#chat-new")
    async def action_new_session(self) -> None:
        if self.busy or self.plugin_id is None:
            return
        self.session_id = self.conversations.new_session(self.plugin_id)
        await self.refresh_sessions()
        await self.show_session(self.session_id)

    @on(Input.Submitted, "#chat-input")
    @on(Button.Pressed, "#chat-send")
    async def action_send(self) -> None:
        if self.busy or self.plugin_id is None or self.session_id is None:
            return
        text = self.query_one("#chat-input", Input).value
        image = self.query_one("#chat-image", PathInput).value.strip()
        if not text.strip() and not image:
            return  # Enter in an empty box: nothing to send (and no empty turn stored)
        self.cancel = CancelToken()
        try:
            stream = self.conversations.send(self.plugin_id, self.session_id, text, [image] if image else [],
                                             cancel=self.cancel, generation=self.generation())
        except (ValueError, KeyError) as exc:
            self.notify(str(exc.args[0] if isinstance(exc, KeyError) else exc), severity="error")
            return
        self.query_one("#chat-input", Input).value = ""
        self.query_one("#chat-image", PathInput).value = ""
        entry = self.conversations.entries(self.plugin_id, self.session_id)[-1]  # the question, just stored
        await self._stream_answer(stream, lambda: self._show_question(entry))

    def generation(self) -> dict[str, str]:
        """The generation settings typed in (checked by the conversation: a bad one is refused)."""
        return {"max_new_tokens": self.query_one("#chat-max-tokens", Input).value.strip(),
                "temperature": self.query_one("#chat-temperature", Input).value.strip()}

    async def _show_question(self, entry: Any) -> None:
        """Add the question below the conversation (its images are the stored copies)."""
        async with self._showing:
            question = ChatMessage(entry.message["role"], self._speaker_for(entry.message["role"]))
            await self.query_one("#chat-messages", VerticalScroll).mount(question)
            await question.replay(message_events(entry))

    @on(Button.Pressed, "#chat-regenerate")
    async def action_regenerate(self) -> None:
        if self.busy or self.plugin_id is None or self.session_id is None:
            return
        self.cancel = CancelToken()
        try:
            stream = self.conversations.regenerate(self.plugin_id, self.session_id, cancel=self.cancel,
                                                   generation=self.generation())
        except (ValueError, KeyError) as exc:
            self.notify(str(exc.args[0] if isinstance(exc, KeyError) else exc), severity="warning")
            return
        session_id, entries = self.session_id, self.conversations.entries(self.plugin_id, self.session_id)
        await self._stream_answer(stream, lambda: self.show_session(session_id, entries=entries))  # the old answer goes

    @on(Button.Pressed, "#chat-stop")
    def action_stop(self) -> None:
        if self.cancel is not None:
            self.cancel.cancel(t("chat.stopped"))

    @on(Button.Pressed, "#chat-clear")
    async def action_clear(self) -> None:
        if self.busy or self.plugin_id is None or self.session_id is None:
            return
        try:
            self.conversations.clear(self.plugin_id, self.session_id)
        except (ValueError, KeyError) as exc:  # answering in another view of this process: nothing is lost
            self.notify(str(exc.args[0] if isinstance(exc, KeyError) else exc), severity="warning")
            return
        await self.show_session(self.session_id)

    @on(Button.Pressed, "#chat-copy")
    def action_copy(self) -> None:
        entries = self.conversations.entries(self.plugin_id, self.session_id) if self.session_id else []
        answers = [message_text(e.message) for e in entries if e.message["role"] == "assistant"]
        answers = [answer for answer in answers if answer]
        if not answers:
            self.notify(t("chat.nothing_to_copy"), severity="warning")
            return
        self.app.copy_to_clipboard(answers[-1])
        self.notify(t("chat.copied"))

    # -- streaming ---------------------------------------------------------------------------
    async def _stream_answer(self, stream: Any, show: Callable[[], Awaitable[None]]) -> None:
        """Start the answer at once in its own thread, then ``show`` the question (read from the store
        before the answer started, so not containing it) and follow the answer."""
        job = run_in_background(stream)  # the model starts now; the screen catches up meanwhile
        self.busy = True
        self.query_one("#chat-stop", Button).disabled = False
        self.query_one("#chat-status", Static).update(t("chat.thinking"))
        await show()
        bubble = ChatMessage("assistant", self.speaker)
        box = self.query_one("#chat-messages", VerticalScroll)
        await box.mount(bubble)
        box.scroll_end(animate=False)
        self._follow(job, bubble)

    @work(thread=True, exclusive=True, group="chat")
    def _follow(self, job: Any, bubble: ChatMessage) -> None:
        # The screen takes what has arrived at most five times a second, so rendering never slows
        # the model down; the first batch holds everything said while the screen was catching up.
        for batch in paced(job, UI_INTERVAL_S):
            self.app.call_from_thread(self._apply, batch, bubble)

    async def _apply(self, batch: list[Any], bubble: ChatMessage) -> None:
        # "Model: ..." lines go to the status line, not into the answer.
        for event in batch:
            if isinstance(event, ev.Log) and event.message.startswith(MODEL_LINE_PREFIX):
                model = event.message.removeprefix(MODEL_LINE_PREFIX)
                self.query_one("#chat-status", Static).update(Text(t("chat.model_answering", model=model)))
        batch = [e for e in batch if not (isinstance(e, ev.Log) and e.message.startswith(MODEL_LINE_PREFIX))]
        await bubble.add_events(batch)
        self.query_one("#chat-messages", VerticalScroll).scroll_end(animate=False)
        done = next((event for event in batch if isinstance(event, ev.Done)), None)
        if done is not None:
            await self._finished(done)

    async def _finished(self, done: ev.Done) -> None:
        self.busy = False
        self.query_one("#chat-stop", Button).disabled = True
        status = t(f"status.{done.status}")
        if done.summary and done.status != "ok":
            status += f" — {done.summary}"
        usage = done.result
        if usage.get("answered_by"):
            status += " · " + t("chat.answered_by", model=usage["answered_by"])
        if usage.get("completion_tokens"):
            status += "  " + t("chat.usage", prompt=usage.get("prompt_tokens", 0), completion=usage["completion_tokens"])
        self.query_one("#chat-status", Static).update(Text(status))
        await self.refresh_sessions()
        await self.refresh_panel()


def panel_table(table: ev.Table) -> RichTable:
    """One side-panel table as a Rich table (cells as plain text: plugin data is never markup)."""
    shown = RichTable(title=table.title or None, show_header=True, expand=True, title_justify="left")
    for column in table.columns:
        shown.add_column(column, overflow="fold")
    for row in table.rows:
        shown.add_row(*(Text("" if cell is None else str(cell)) for cell in row))
    return shown
