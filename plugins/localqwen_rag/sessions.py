"""RAG conversations in the one chat store: named sessions for the ``ask`` action, a stored turn
for it, and the one-time import of the JSON session files older versions wrote.

The chat views store turns themselves (``Conversations.send``); the ``ask`` action is not a chat
view, so :func:`run_stored_turn` does the same for it: user message in, the same responder, the
answer stored with what the views show (tool calls, step panels and their text, tables), metadata
saved. It mirrors ``Conversations._answer``, which a plugin cannot import (the app layer is above
the plugins); keep the two storing the same shapes.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.plugin_api import ChatRequest, events

if TYPE_CHECKING:
    from localqwen.storage.chat_store import PluginChats

NAME_KEY = "session_name"  # metadata: the name `ask --session NAME` reaches the session by
IMPORTED_KEY = "imported_from"  # metadata: the JSON file an imported session came from
LEGACY_FOLDER = "sessions"
_SHOWN = (events.ToolCall, events.Step, events.Image, events.Table, events.Warning, events.Error)


def named_session(chats: PluginChats, name: str) -> int:
    """The session ``ask --session NAME`` continues, created on first use."""
    for info in chats.sessions(limit=100_000):
        if info.metadata.get(NAME_KEY) == name:
            return info.id
    return chats.create_session(metadata={NAME_KEY: name})


def attach_image(source: Path, uploads_dir: Path, session_id: int) -> str:
    """Copy an image into the uploads folder, where chat views may show it (as ``Conversations`` does)."""
    folder = uploads_dir / "chat" / str(session_id)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{uuid.uuid4().hex[:12]}{source.suffix.lower()}"
    shutil.copyfile(source, target)
    return str(target)


def run_stored_turn(chats: PluginChats, session_id: int, message: dict[str, Any], choices: dict[str, Any],
                    respond: Callable[[ChatRequest], Iterator[Any]]) -> Iterator[Any]:
    """Store ``message``, answer it with ``respond`` under ``choices`` and store the answer.

    The answer is stored even when the run stops early (cancel, error), like a chat view's."""
    history = chats.messages(session_id)
    metadata = {**chats.metadata(session_id), **choices}
    chats.append(session_id, message)
    request = ChatRequest(session_id=session_id, history=history, message=message, metadata=metadata)
    text: list[str] = []
    calls: list[events.ToolCall] = []
    shown: list[dict[str, Any]] = []
    try:
        for event in respond(request):
            if isinstance(event, events.TextDelta) and event.step is None:
                text.append(event.text)
            elif isinstance(event, events.TextDelta):  # a step panel's text, joined and kept with the panel
                last = shown[-1] if shown else None
                if last is not None and last.get("kind") == "text" and last.get("step") == event.step:
                    last["text"] += event.text
                else:
                    shown.append(event.model_dump())
            elif isinstance(event, events.ToolCall):
                calls.append(event)
            if isinstance(event, _SHOWN):
                shown.append(event.model_dump())
            yield event
    finally:
        reply: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
        if calls:
            reply["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": dict(c.arguments)}}
                                   for c in calls]
        if text or calls or shown:
            chats.append(session_id, reply, shown)
        chats.set_metadata(session_id, request.metadata)


def import_legacy_sessions(chats: PluginChats, data_dir: Path) -> Iterator[Any]:
    """Move ``<data>/sessions/*.json`` ({"turns": [...]}) into the chat store, once.

    Each file becomes a session reachable by its old name (``ask --session NAME``), its turns
    become user and assistant messages and its turn records the session's ``turns``. The file is
    then renamed ``*.json.imported`` (kept, never deleted); a file already imported (a crash
    between the two steps) is only renamed, and an unreadable one is renamed ``*.json.unreadable``
    with a warning. Yields a ``Log`` per imported file."""
    folder = data_dir / LEGACY_FOLDER
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        return
    done = {info.metadata.get(IMPORTED_KEY) for info in chats.sessions(limit=100_000)}
    for file in files:
        if file.name not in done:
            try:
                turns = _legacy_turns(file)
            except (OSError, ValueError) as exc:
                file.rename(file.with_name(file.name + ".unreadable"))
                yield events.Warning(message=f"could not import the RAG session file {file}: {exc}; "
                                             f"kept as {file.name}.unreadable")
                continue
            session_id = chats.create_session(metadata={NAME_KEY: file.stem, IMPORTED_KEY: file.name})
            records = []
            for turn in turns:
                position = chats.append(session_id, {"role": "user", "content": str(turn["question"])})
                chats.append(session_id, {"role": "assistant", "content": str(turn.get("answer", ""))})
                records.append({**turn, "position": position})
            chats.set_metadata(session_id, {NAME_KEY: file.stem, IMPORTED_KEY: file.name, "turns": records})
            yield events.Log(message=f"imported RAG session '{file.stem}' ({len(turns)} turn(s)) into the chat store")
        file.rename(file.with_name(file.name + ".imported"))


def _legacy_turns(file: Path) -> list[dict[str, Any]]:
    data = json.loads(file.read_text(encoding="utf-8"))
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, list) or not all(isinstance(t, dict) and "question" in t for t in turns):
        raise ValueError('expected {"turns": [{"question": ..., "answer": ...}, ...]}')
    return turns
