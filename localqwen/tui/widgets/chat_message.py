"""One chat message: who said it, then what it showed, drawn by the same :class:`EventView` as an
action's output (streamed Markdown, step panels, tool-call blocks, images, tables, errors).

A live answer gets its events as they arrive; a message from the history gets the events
:func:`localqwen.chat_replay.message_events` rebuilt from the store, so both look the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label

from localqwen.plugin_api import events as ev
from localqwen.tui.event_view import EventView


class ChatMessage(Vertical):
    DEFAULT_CSS = "ChatMessage { height: auto; }"  # its body's size is in screens.tcss (.chat-body)

    def __init__(self, role: str, speaker: str) -> None:
        super().__init__(classes=f"chat-message role-{role}")
        self.role = role
        self.speaker = speaker
        self.body = EventView(classes="chat-body", show_done=False)
        self.body.can_focus = False  # Tab moves between the inputs, not through every message

    def compose(self) -> ComposeResult:
        yield Label(self.speaker, classes="chat-role", markup=False)
        yield self.body

    async def add_events(self, batch: list[Any]) -> None:
        """Render events (call once mounted): a live answer's as they arrive."""
        await self.body.add_events(batch)

    async def replay(self, events: Iterable[Any]) -> None:
        """Render a stored message at once; the closing Done ends its Markdown stream."""
        await self.body.add_events([*events, ev.Done()])

    @property
    def text(self) -> str:
        """The answer's own text (step panels' text left out)."""
        return self.body.text.get(None, "")

    @property
    def done(self) -> ev.Done | None:
        return self.body.done
