"""RAG conversations in the one chat store: named sessions for the ``ask`` action, and the
one-time import of the JSON session files older versions wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.plugin_api import events

if TYPE_CHECKING:
    from localqwen.storage.chat_store import PluginChats

NAME_KEY = "session_name"  # metadata: the name `ask --session NAME` reaches the session by
IMPORTED_KEY = "imported_from"  # metadata: the JSON file an imported session came from
LEGACY_FOLDER = "sessions"


def named_session(chats: PluginChats, name: str) -> int:
    """The session ``ask --session NAME`` continues, created on first use."""
    for info in chats.sessions(limit=100_000):
        if info.metadata.get(NAME_KEY) == name:
            return info.id
    return chats.create_session(metadata={NAME_KEY: name})


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
