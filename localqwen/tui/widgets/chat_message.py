"""One chat message: who said it, its text as Markdown, attached images, tool calls folded away."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Label, Markdown, Static

from localqwen.storage.chat_store import message_images, message_text
from localqwen.i18n import t
from localqwen.tui.widgets.image_block import file_link


class ChatMessage(Vertical):
    DEFAULT_CSS = "ChatMessage { height: auto; }"

    def __init__(self, message: dict[str, Any]) -> None:
        role = message.get("role", "assistant")
        super().__init__(classes=f"chat-message role-{role}")
        self.message = message
        self.role = role
        self.text = message_text(message)
        self._stream: Any = None

    def compose(self) -> ComposeResult:
        if self.role == "tool":
            title = t("chat.tool_result", name=self.message.get("name", "tool"))
            with Collapsible(title=title, collapsed=True, classes="tool-call"):
                yield Static(self.text, markup=False)
            return
        yield Label(t(f"chat.role_{self.role}"), classes="chat-role")
        for image in message_images(self.message):
            line = Text("🖼 ")
            line.append_text(file_link(image, Path(image).name))
            yield Static(line, classes="chat-image")
        yield Markdown(self.text, classes="chat-text")
        for call in self.message.get("tool_calls") or []:
            yield tool_call_block(call.get("function", {}).get("name", "?"), call.get("function", {}).get("arguments", {}))

    async def append(self, delta: str) -> None:
        """Add streamed text (the Markdown is updated in batches by Textual's MarkdownStream)."""
        self.text += delta
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(".chat-text", Markdown))
        await self._stream.write(delta)

    async def finish(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None


def tool_call_block(name: str, arguments: dict[str, Any], result: str | None = None) -> Collapsible:
    body = json.dumps(arguments, ensure_ascii=False, indent=2)
    if result is not None:
        body += f"\n→ {result}"
    return Collapsible(Static(body, markup=False), title=t("events.tool_call", name=name), collapsed=True,
                       classes="tool-call")
