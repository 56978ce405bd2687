"""Conversation as a plugin capability.

A plugin offers a chat by decorating one method with ``@chat``. The method takes a
:class:`ChatRequest` (the session's history, the new message with optional images, the session's
metadata) and the :class:`Context`, and yields the usual events: ``TextDelta`` for the answer
(``step=None``) or for a step panel, ``Step``, ``ToolCall``, ``Image``, ``Table``, ``Progress``... Every
frontend (TUI chat screen, web chat tab, ``localqwen chat``) renders any plugin's chat from these,
and the host stores the answer in the one chat store, so the plugin writes no frontend or storage code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from localqwen.storage.chat_store import message_images, message_text


@dataclass
class ChatRequest:
    session_id: int
    history: list[dict[str, Any]]  # earlier messages of the session, oldest first
    message: dict[str, Any]  # the new user message (content: text, or a list of image/text parts)
    # This session's plugin-owned metadata. Change it in place; the host saves it after the turn.
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return message_text(self.message)

    @property
    def images(self) -> list[str]:
        return message_images(self.message)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """History plus the new message: what a plain model chat sends to the engine."""
        return [*self.history, self.message]


ChatFunc = Callable[[Any, ChatRequest, Any], Iterator[Any]]


def chat(func: ChatFunc) -> ChatFunc:
    """Mark a plugin method as its chat responder: ``def respond(self, request, ctx) -> events``."""
    func.__localqwen_chat__ = True  # type: ignore[attr-defined]
    return func
