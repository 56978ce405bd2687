"""Chat: sessions on the left, the conversation with streaming answers on the right."""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Header, Input, ListItem, ListView, Static

from localqwen.storage.chat_store import message_text
from localqwen.i18n import t
from localqwen.jobs import paced, run_in_background
from localqwen.plugin_api import CancelToken
from localqwen.plugin_api import events as ev
from localqwen.tui.screens.base import BaseScreen
from localqwen.tui.widgets.chat_message import ChatMessage, tool_call_block
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
        self.session_id: int | None = None
        self.cancel: CancelToken | None = None
        self.busy = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="chat-layout"):
            with Vertical(id="chat-sidebar"):
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
        yield Footer()

    async def on_mount(self) -> None:
        controller = self.app.chat  # type: ignore[attr-defined]
        if self.session_id is None:
            self.session_id = controller.latest_or_new_session()
        await self.refresh_sessions()
        await self.show_session(self.session_id)

    async def refresh_sessions(self) -> None:
        sessions = self.app.chat.history.sessions()  # type: ignore[attr-defined]
        view = self.query_one("#chat-sessions", ListView)
        await view.clear()
        for info in sessions:
            label = info.title or t("chat.untitled")
            await view.append(ListItem(Static(label, markup=False), id=f"session-{info.id}"))
            if info.id == self.session_id:
                view.index = len(view.children) - 1

    async def show_session(self, session_id: int) -> None:
        self.session_id = session_id
        box = self.query_one("#chat-messages", VerticalScroll)
        await box.remove_children()
        for message in self.app.chat.history.messages(session_id):  # type: ignore[attr-defined]
            await box.mount(ChatMessage(message))
        box.scroll_end(animate=False)

    @on(ListView.Selected, "#chat-sessions")
    async def _pick_session(self, event: ListView.Selected) -> None:
        if self.busy or event.item is None or not event.item.id:
            return
        await self.show_session(int(event.item.id.removeprefix("session-")))

    # -- actions -------------------------------------------------------------------------------
    @on(Button.Pressed, "#chat-new")
    async def action_new_session(self) -> None:
        if self.busy:
            return
        self.session_id = self.app.chat.history.create_session()  # type: ignore[attr-defined]
        await self.refresh_sessions()
        await self.show_session(self.session_id)

    @on(Input.Submitted, "#chat-input")
    @on(Button.Pressed, "#chat-send")
    async def action_send(self) -> None:
        if self.busy or self.session_id is None:
            return
        text = self.query_one("#chat-input", Input).value
        image = self.query_one("#chat-image", PathInput).value.strip()
        images = [image] if image else []
        controller = self.app.chat  # type: ignore[attr-defined]
        self.cancel = CancelToken()
        try:
            stream = controller.send(self.session_id, text, images, cancel=self.cancel)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        self.query_one("#chat-input", Input).value = ""
        self.query_one("#chat-image", PathInput).value = ""
        await self.show_session(self.session_id)
        await self._stream_answer(stream)

    @on(Button.Pressed, "#chat-regenerate")
    async def action_regenerate(self) -> None:
        if self.busy or self.session_id is None:
            return
        self.cancel = CancelToken()
        try:
            stream = self.app.chat.regenerate(self.session_id, cancel=self.cancel)  # type: ignore[attr-defined]
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            return
        await self.show_session(self.session_id)
        await self._stream_answer(stream)

    @on(Button.Pressed, "#chat-stop")
    def action_stop(self) -> None:
        if self.cancel is not None:
            self.cancel.cancel(t("chat.stopped"))

    @on(Button.Pressed, "#chat-clear")
    async def action_clear(self) -> None:
        if self.busy or self.session_id is None:
            return
        self.app.chat.history.clear(self.session_id)  # type: ignore[attr-defined]
        await self.show_session(self.session_id)

    @on(Button.Pressed, "#chat-copy")
    def action_copy(self) -> None:
        messages = self.app.chat.history.messages(self.session_id) if self.session_id else []  # type: ignore[attr-defined]
        answers = [message_text(m) for m in messages if m["role"] == "assistant"]
        if not answers:
            self.notify(t("chat.nothing_to_copy"), severity="warning")
            return
        self.app.copy_to_clipboard(answers[-1])
        self.notify(t("chat.copied"))

    # -- streaming ---------------------------------------------------------------------------
    async def _stream_answer(self, stream: Any) -> None:
        self.busy = True
        self.query_one("#chat-stop", Button).disabled = False
        self.query_one("#chat-status", Static).update(t("chat.thinking"))
        bubble = ChatMessage({"role": "assistant", "content": ""})
        box = self.query_one("#chat-messages", VerticalScroll)
        await box.mount(bubble)
        self._run_stream(stream, bubble)

    @work(thread=True, exclusive=True, group="chat")
    def _run_stream(self, stream: Any, bubble: ChatMessage) -> None:
        # The answer is generated in its own thread; the screen takes what has arrived at most
        # ten times a second, so rendering never slows the model down.
        for batch in paced(run_in_background(stream), UI_INTERVAL_S):
            self.app.call_from_thread(self._apply, batch, bubble)

    async def _apply(self, batch: list[Any], bubble: ChatMessage) -> None:
        text = "".join(e.text for e in batch if isinstance(e, ev.TextDelta))
        if text:
            await bubble.append(text)
        for event in batch:
            if not isinstance(event, ev.TextDelta):
                await self._on_event(event, bubble)
        self.query_one("#chat-messages", VerticalScroll).scroll_end(animate=False)

    async def _on_event(self, event: Any, bubble: ChatMessage) -> None:
        if isinstance(event, ev.ToolCall):
            await bubble.mount(tool_call_block(event.name, event.arguments, event.result))
        elif isinstance(event, ev.Error):
            await bubble.mount(Static(f"✗ {event.message}", classes="error", markup=False))
        elif isinstance(event, ev.Done):
            await bubble.finish()
            self.busy = False
            self.query_one("#chat-stop", Button).disabled = True
            usage = event.result
            status = t(f"status.{event.status}")
            if usage.get("completion_tokens"):
                status += "  " + t("chat.usage", prompt=usage.get("prompt_tokens", 0),
                                   completion=usage["completion_tokens"])
            self.query_one("#chat-status", Static).update(status)
            await self.refresh_sessions()
        self.query_one("#chat-messages", VerticalScroll).scroll_end(animate=False)
