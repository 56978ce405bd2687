"""Every plugin's chat sessions and messages, in the one SQLite database.

Sessions are namespaced by plugin: a plugin sees only its own (``ChatStore.for_plugin``), and each
session carries a small JSON ``metadata`` object the plugin owns (a RAG topology, a patient
profile, a mission). Messages are stored in the shared chat format (role, content as text or a
list of parts, optional ``tool_calls``); image parts keep the path of a copy inside the app's
uploads folder, never a PIL object. Beside each message the store keeps what the views showed
while it was made (tool-call blocks, step panels, images), so a reopened chat looks the same.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from localqwen.storage.file_lock import FileLock

if TYPE_CHECKING:
    from localqwen.storage.database import Database

MIGRATIONS = [
    """CREATE TABLE chat_sessions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        title TEXT NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    )""",
    """CREATE TABLE chat_messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id INTEGER NOT NULL REFERENCES chat_sessions(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        message TEXT NOT NULL,
        created_at REAL NOT NULL,
        UNIQUE(session_id, position)
    )""",
    # Chat became a plugin capability: sessions made before belong to the plain model chat.
    "ALTER TABLE chat_sessions ADD COLUMN plugin_id TEXT NOT NULL DEFAULT 'chat'",
    "ALTER TABLE chat_sessions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE chat_messages ADD COLUMN display TEXT NOT NULL DEFAULT '[]'",
    "CREATE INDEX chat_sessions_plugin ON chat_sessions(plugin_id, updated_at DESC)",
]

TITLE_LENGTH = 48
ROLES = ("system", "user", "assistant", "tool")


@dataclass
class ChatSessionInfo:
    id: int
    plugin_id: str
    title: str
    model: str
    created_at: float
    updated_at: float
    message_count: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChatEntry:
    """One stored message and what the views showed with it (events as JSON objects)."""

    position: int
    message: dict[str, Any]
    display: list[dict[str, Any]] = field(default_factory=list)


class ChatStore:
    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate("chat_history", MIGRATIONS)
        # Sessions with a turn under way (the chat views through Conversations, a plugin's ask
        # action): one turn at a time, or two answers land in either order. Each is a lock file
        # beside the database, so the TUI and the web view of one data folder, two processes, keep
        # apart too; the system frees a killed process's turn with its lock, so none stays stuck.
        self._turns_dir = database.path.with_name(database.path.name + ".turns")
        self._turns: dict[int, FileLock] = {}
        self._turns_lock = threading.Lock()

    def claim_turn(self, session_id: int) -> bool:
        """Mark a turn of ``session_id`` under way; False (nothing changed) when one already is, in
        this process or another one on the same database."""
        with self._turns_lock:
            if session_id in self._turns:
                return False
            lock = self._turn_lock(session_id)
            if not lock.acquire(blocking=False):
                return False
            self._turns[session_id] = lock
            return True

    def release_turn(self, session_id: int) -> None:
        with self._turns_lock:
            lock = self._turns.pop(session_id, None)
        if lock is not None:
            lock.release()

    def answering(self, session_id: int) -> bool:
        """Whether a turn of ``session_id`` is under way here or in another process."""
        with self._turns_lock:
            return session_id in self._turns or self._turn_lock(session_id).busy()

    def _turn_lock(self, session_id: int) -> FileLock:
        # The files stay (a few bytes each, removed with their session): deleting a lock file
        # another process may have just opened would let two holders lock two different files.
        return FileLock(self._turns_dir / f"{session_id}.lock")

    def for_plugin(self, plugin_id: str) -> PluginChats:
        return PluginChats(self, plugin_id)

    @property
    def _conn(self):
        return self.database.connection

    # -- sessions ------------------------------------------------------------------------------
    def create_session(self, plugin_id: str, title: str = "", *, model: str = "",
                       metadata: dict[str, Any] | None = None) -> int:
        now = time.time()
        cursor = self._conn.execute(
            "INSERT INTO chat_sessions(plugin_id, title, model, metadata, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (plugin_id, title, model, _dump(metadata or {}), now, now),
        )
        return int(cursor.lastrowid or 0)

    def sessions(self, plugin_id: str, limit: int = 50) -> list[ChatSessionInfo]:
        """The plugin's sessions, most recently used first."""
        rows = self._conn.execute(
            "SELECT s.*, (SELECT COUNT(*) FROM chat_messages m WHERE m.session_id = s.id) AS n "
            "FROM chat_sessions s WHERE s.plugin_id = ? ORDER BY s.updated_at DESC, s.id DESC LIMIT ?",
            (plugin_id, limit),
        ).fetchall()
        return [_session(row) for row in rows]

    def session(self, session_id: int, plugin_id: str | None = None) -> ChatSessionInfo:
        """One session; with ``plugin_id``, a session of another plugin is as good as missing."""
        row = self._conn.execute(
            "SELECT s.*, (SELECT COUNT(*) FROM chat_messages m WHERE m.session_id = s.id) AS n "
            "FROM chat_sessions s WHERE s.id = ?", (session_id,),
        ).fetchone()
        if row is None or (plugin_id is not None and row["plugin_id"] != plugin_id):
            raise KeyError(f"no chat session {session_id}" + (f" for plugin '{plugin_id}'" if plugin_id else ""))
        return _session(row)

    def rename(self, session_id: int, title: str) -> None:
        self._conn.execute("UPDATE chat_sessions SET title = ? WHERE id = ?", (title, session_id))

    def delete_session(self, session_id: int) -> None:
        self._conn.execute("DELETE FROM chat_sessions WHERE id = ?", (session_id,))
        # Its turn's lock file goes too, unless a turn holds it (ids are never reused, so a file
        # left is only a few bytes, and a holder of the unlinked file holds a deleted session's turn).
        if self.claim_turn(session_id):
            try:
                self._turn_lock(session_id).path.unlink(missing_ok=True)
            finally:
                self.release_turn(session_id)

    def set_metadata(self, session_id: int, metadata: dict[str, Any]) -> None:
        self._conn.execute("UPDATE chat_sessions SET metadata = ? WHERE id = ?", (_dump(metadata), session_id))

    # -- messages ------------------------------------------------------------------------------
    def messages(self, session_id: int) -> list[dict[str, Any]]:
        return [entry.message for entry in self.entries(session_id)]

    def entries(self, session_id: int) -> list[ChatEntry]:
        rows = self._conn.execute(
            "SELECT position, message, display FROM chat_messages WHERE session_id = ? ORDER BY position",
            (session_id,),
        ).fetchall()
        return [ChatEntry(row["position"], json.loads(row["message"]), json.loads(row["display"] or "[]"))
                for row in rows]

    def append(self, session_id: int, message: dict[str, Any], display: list[dict[str, Any]] | None = None) -> int:
        """Add a message at the end; the first user message also names an untitled session."""
        if message.get("role") not in ROLES:
            raise ValueError(f"unknown chat role: {message.get('role')!r}")
        payload = json.dumps(message, ensure_ascii=False)
        now = time.time()
        with self.database.connect() as conn:
            row = conn.execute(
                "SELECT COALESCE(MAX(position), -1) + 1 AS next FROM chat_messages WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            position = row["next"]
            conn.execute(
                "INSERT INTO chat_messages(session_id, position, message, display, created_at) VALUES (?, ?, ?, ?, ?)",
                (session_id, position, payload, _dump(display or []), now),
            )
            conn.execute("UPDATE chat_sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            if message["role"] == "user":
                conn.execute(
                    "UPDATE chat_sessions SET title = ? WHERE id = ? AND title = ''",
                    (_title_from(message), session_id),
                )
        return position

    def truncate(self, session_id: int, keep: int) -> None:
        """Keep only the first ``keep`` messages (regenerate drops the last answer this way)."""
        self._conn.execute("DELETE FROM chat_messages WHERE session_id = ? AND position >= ?", (session_id, keep))

    def clear(self, session_id: int) -> None:
        self.truncate(session_id, 0)


class PluginChats:
    """One plugin's view of the chat store: only its own sessions exist here."""

    def __init__(self, store: ChatStore, plugin_id: str) -> None:
        self.store = store
        self.plugin_id = plugin_id

    def create_session(self, title: str = "", *, model: str = "", metadata: dict[str, Any] | None = None) -> int:
        return self.store.create_session(self.plugin_id, title, model=model, metadata=metadata)

    def sessions(self, limit: int = 50) -> list[ChatSessionInfo]:
        return self.store.sessions(self.plugin_id, limit)

    def session(self, session_id: int) -> ChatSessionInfo:
        return self.store.session(session_id, self.plugin_id)

    def claim_turn(self, session_id: int) -> bool:
        """See :meth:`ChatStore.claim_turn` (this plugin's sessions only)."""
        self.session(session_id)
        return self.store.claim_turn(session_id)

    def release_turn(self, session_id: int) -> None:
        self.store.release_turn(session_id)

    def latest_or_new(self) -> int:
        found = self.sessions(limit=1)
        return found[0].id if found else self.create_session()

    def rename(self, session_id: int, title: str) -> None:
        self.session(session_id)
        self.store.rename(session_id, title)

    def delete(self, session_id: int) -> None:
        self.session(session_id)
        self.store.delete_session(session_id)

    def metadata(self, session_id: int) -> dict[str, Any]:
        return self.session(session_id).metadata

    def set_metadata(self, session_id: int, metadata: dict[str, Any]) -> None:
        self.session(session_id)
        self.store.set_metadata(session_id, metadata)

    def messages(self, session_id: int) -> list[dict[str, Any]]:
        self.session(session_id)
        return self.store.messages(session_id)

    def entries(self, session_id: int) -> list[ChatEntry]:
        self.session(session_id)
        return self.store.entries(session_id)

    def append(self, session_id: int, message: dict[str, Any], display: list[dict[str, Any]] | None = None) -> int:
        self.session(session_id)
        return self.store.append(session_id, message, display)

    def truncate(self, session_id: int, keep: int) -> None:
        self.session(session_id)
        self.store.truncate(session_id, keep)


def message_text(message: dict[str, Any]) -> str:
    """The text parts of a message joined (images and other parts left out)."""
    content = message.get("content") or ""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if part.get("type") == "text")


def message_images(message: dict[str, Any]) -> list[str]:
    content = message.get("content") or ""
    if isinstance(content, str):
        return []
    return [str(part["image"]) for part in content if part.get("type") == "image" and isinstance(part.get("image"), str)]


def _title_from(message: dict[str, Any]) -> str:
    text = " ".join(message_text(message).split())
    if not text:
        return "Image" if message_images(message) else "Chat"
    return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1] + "…"


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _session(row: Any) -> ChatSessionInfo:
    return ChatSessionInfo(id=row["id"], plugin_id=row["plugin_id"], title=row["title"], model=row["model"],
                           created_at=row["created_at"], updated_at=row["updated_at"], message_count=row["n"],
                           metadata=json.loads(row["metadata"] or "{}"))
