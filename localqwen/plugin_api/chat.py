"""Conversation as a plugin capability.

A plugin offers a chat by decorating one method with ``@chat``. The method takes a
:class:`ChatRequest` (the session's history, the new message with optional images, the session's
metadata) and the :class:`Context`, and yields the usual events: ``TextDelta`` for the answer
(``step=None``) or for a step panel, ``Step``, ``ToolCall``, ``Image``, ``Table``, ``Progress``... Every
frontend (TUI chat screen, web chat tab, ``localqwen chat``) renders any plugin's chat from these,
and the host stores the answer in the one chat store, so the plugin writes no frontend or storage code.
"""

from __future__ import annotations

import copy
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.storage.chat_store import PluginChats, message_images, message_text
from localqwen.vocabulary import events as ev

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"}
MAX_IMAGE_BYTES = 20 * 1024 * 1024
# Events kept beside an answer so a reopened chat shows them again (the answer text is the message).
DISPLAYED = (ev.ToolCall, ev.Step, ev.Image, ev.Table, ev.Warning, ev.Error)


@dataclass
class ChatRequest:
    session_id: int
    history: list[dict[str, Any]]  # earlier messages of the session, oldest first
    message: dict[str, Any]  # the new user message (content: text, or a list of image/text parts)
    # This session's plugin-owned metadata. Change it in place; the host saves it after the turn.
    metadata: dict[str, Any] = field(default_factory=dict)
    # What the chat view's generation settings ask for this turn (max_new_tokens, temperature),
    # checked by generation_options; empty = the plugin's own defaults. See generation_settings.
    generation: dict[str, Any] = field(default_factory=dict)

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

    def generation_settings(self, *, max_new_tokens: int, temperature: float = 0.0, **fixed: Any) -> Any:
        """Engine settings for this turn: the chat view's choices over the plugin's defaults
        (``max_new_tokens``, ``temperature``); ``fixed`` (stop words, top_p...) is passed as is."""
        from localqwen.runtime.engine.base import GenerationSettings

        chosen = {"max_new_tokens": max_new_tokens, "temperature": temperature, **self.generation}
        return GenerationSettings(**chosen, **fixed)


# What a chat view may set per turn, with the bounds it is checked against.
GENERATION_BOUNDS: dict[str, tuple[type, float, float]] = {
    "max_new_tokens": (int, 1, 32768),
    "temperature": (float, 0.0, 2.0),
}


def generation_options(values: dict[str, Any] | None) -> dict[str, Any]:
    """Check a chat view's generation settings; a missing or ``None`` value means "plugin default".
    Raises ``ValueError`` naming the setting and its bounds."""
    checked: dict[str, Any] = {}
    for name, value in (values or {}).items():
        if name not in GENERATION_BOUNDS:
            raise ValueError(f"unknown generation setting {name!r}; choose from {', '.join(GENERATION_BOUNDS)}")
        if value is None or value == "":
            continue
        kind, low, high = GENERATION_BOUNDS[name]
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number from {low:g} to {high:g}, got {value!r}") from None
        if kind is int and not number.is_integer():
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        if not low <= number <= high:
            raise ValueError(f"{name} must be from {low:g} to {high:g}, got {value!r}")
        checked[name] = int(number) if kind is int else number
    return checked


ChatFunc = Callable[[Any, ChatRequest, Any], Iterator[Any]]


def chat(func: ChatFunc) -> ChatFunc:
    """Mark a plugin method as its chat responder: ``def respond(self, request, ctx) -> events``."""
    func.__localqwen_chat__ = True  # type: ignore[attr-defined]
    return func


def plain_history(history: list[dict[str, Any]], *, keep: int | None = None,
                  image_note: str | None = None) -> list[dict[str, Any]]:
    """Earlier user and assistant messages as plain text for a prompt: no images, no tool-call
    records, no ``/`` command exchanges (a command and its answer are the chat's business, not the
    model's). An image-only user message becomes ``image_note`` when given, else it is left out;
    ``keep`` keeps only the last messages."""
    plain: list[dict[str, Any]] = []
    in_command = False
    for message in history:
        text = message_text(message).strip()
        if message.get("role") == "user":
            in_command = text.startswith("/")
            if not text and image_note and message_images(message):
                text = image_note
            if not in_command and text:
                plain.append({"role": "user", "content": text})
        elif message.get("role") == "assistant" and not in_command and text:
            plain.append({"role": "assistant", "content": text})
    return plain[-keep:] if keep else plain


PanelFunc = Callable[[Any, dict[str, Any], Any], list[ev.Table]]


def chat_panel(func: PanelFunc) -> PanelFunc:
    """Mark a plugin method as its chat's side panel: ``def panel(self, metadata, ctx) -> [Table]``.

    The chat views show the tables beside the conversation (a patient profile, the memories a turn
    recalled...) and ask again after every turn and when a session opens. The method reads the
    session's metadata and must be quick and side-effect free; edits go through the chat (commands)
    or the plugin's actions, so every frontend gets them."""
    func.__localqwen_chat_panel__ = True  # type: ignore[attr-defined]
    return func


class ImageRejected(ValueError):
    """An attached file is not a usable image; ``reason`` is "missing", "type" or "too_big" (the
    frontends translate it, with ``detail`` as the message's fields)."""

    def __init__(self, reason: str, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.detail = detail


def attach_image(source: str | Path, uploads_dir: Path, session_id: int) -> str:
    """Check an image (exists, image type, size) and copy it into the uploads folder, where the chat
    views may show it; returns the copy's path. Raises :class:`ImageRejected` with the reason."""
    path = Path(source).expanduser()
    if not path.is_file():
        raise ImageRejected("missing", f"no such image: {path}", path=str(path))
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        suffixes = ", ".join(sorted(IMAGE_SUFFIXES))
        raise ImageRejected("type", f"{path.name}: not an image (use {suffixes})", suffixes=suffixes)
    if path.stat().st_size > MAX_IMAGE_BYTES:
        mb = MAX_IMAGE_BYTES // 2**20
        raise ImageRejected("too_big", f"{path.name}: over the {mb} MB limit for an image", mb=mb)
    folder = uploads_dir / "chat" / str(session_id)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{uuid.uuid4().hex[:12]}{path.suffix.lower()}"
    shutil.copyfile(path, target)
    return str(target)


class TurnRecord:
    """What one chat turn said and showed, collected from its events and stored as one message:
    the answer text (``TextDelta`` without a step), its tool calls, and the display events
    (tool-call blocks, step panels with their text joined, images, tables, warnings, errors)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[ev.ToolCall] = []
        self.display: list[dict[str, Any]] = []

    def see(self, event: Any) -> None:
        if isinstance(event, ev.TextDelta) and event.step is None:
            if not self.text:  # marks where the answer came among the blocks, for a faithful reload
                self.display.append(ev.TextDelta(text="").model_dump())
            self.text.append(event.text)
        elif isinstance(event, ev.TextDelta):  # a step panel's text: one stored event, not one per token
            last = self.display[-1] if self.display else None
            if last is not None and last.get("kind") == "text" and last.get("step") == event.step:
                last["text"] += event.text
            else:
                self.display.append(event.model_dump())
        elif isinstance(event, ev.ToolCall):
            self.calls.append(event)
        if isinstance(event, DISPLAYED):
            self.display.append(event.model_dump())

    def store(self, chats: PluginChats, session_id: int) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text)}
        if self.calls:
            message["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": dict(c.arguments)}}
                                     for c in self.calls]
        if self.text or self.calls or self.display:
            chats.append(session_id, message, self.display)


def answer_stored(chats: PluginChats, session_id: int, respond: Callable[[ChatRequest], Iterator[Any]], *,
                  metadata: dict[str, Any] | None = None, generation: dict[str, Any] | None = None
                  ) -> Iterator[Any]:
    """Answer the session's last (user) message with ``respond(request)`` and store the answer.

    ``metadata`` is laid over the stored session metadata for this turn. The answer is stored
    before the final ``Done`` is passed on (a view reloading at "done" sees it), or, when the
    caller stops early, with what was said so far; changed metadata is saved after the turn.
    """
    messages = chats.messages(session_id)
    stored = chats.metadata(session_id)
    before = {**stored, **(metadata or {})}
    request = ChatRequest(session_id=session_id, history=messages[:-1], message=messages[-1],
                          metadata=copy.deepcopy(before), generation=dict(generation or {}))
    record = TurnRecord()
    saved = False
    try:
        for event in respond(request):
            record.see(event)
            if isinstance(event, ev.Done):
                record.store(chats, session_id)
                saved = True
            yield event
    finally:
        if not saved:  # stopped mid-answer: keep what was said
            record.store(chats, session_id)
        if request.metadata != stored:
            chats.set_metadata(session_id, request.metadata)


def ask_in_session(chats: PluginChats, session_id: int, message: dict[str, Any],
                   respond: Callable[[ChatRequest], Iterator[Any]], *, session_name: str,
                   metadata: dict[str, Any] | None = None, uploads: Sequence[str] = ()) -> Iterator[Any]:
    """A plugin action's turn in one of its chat sessions (the RAG and medical ``ask``): store the
    user ``message`` and answer it with :func:`answer_stored`, one turn of a session at a time, as the
    chat views do. While the session answers elsewhere (its chat tab) the turn is refused with an
    ``Error`` and a failed ``Done``, and nothing is stored: the ``uploads`` copied for the message
    (:func:`attach_image`) are removed then, as no stored message will show them."""
    if not chats.claim_turn(session_id):
        for upload in uploads:
            Path(upload).unlink(missing_ok=True)
        refusal = f"session {session_name!r} is still answering a question; ask again when it is done"
        yield ev.Error(message=refusal, field="session")
        yield ev.Done(status="failed", summary=refusal)
        return
    try:
        chats.append(session_id, message)
        yield from answer_stored(chats, session_id, respond, metadata=metadata)
    finally:
        chats.release_turn(session_id)
