"""Chat sessions and their messages, kept in SQLite so a restart shows the last sessions.

Messages are stored in the shared chat format (see CONTRACTS: role, content as text or a list of
parts, optional ``tool_calls``); image parts keep the path of a copy inside the app's uploads
folder, never a PIL object.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
]

TITLE_LENGTH = 48


@dataclass
class ChatSessionInfo:
    id: int
    title: str
    model: str
    created_at: float
    updated_at: float
    message_count: int


class ChatHistory:
    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate("chat_history", MIGRATIONS)

    @property
    def _conn(self):
        return self.database.connection

    def create_session(self, title: str = "", model: str = "") -> int:
        now = time.time()
        cursor = self._conn.execute(
            "INSERT INTO chat_sessions(title, model, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (title, model, now, now),
        )
        return int(cursor.lastrowid or 0)

    def sessions(self, limit: int = 50) -> list[ChatSessionInfo]:
        """Most recently used first."""
        rows = self._conn.execute(
            "SELECT s.*, (SELECT COUNT(*) FROM chat_messages m WHERE m.session_id = s.id) AS n "
            "FROM chat_sessions s ORDER BY s.updated_at DESC, s.id DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [ChatSessionInfo(r["id"], r["title"], r["model"], r["created_at"], r["updated_at"], r["n"])
                for r in rows]

    def session(self, session_id: int) -> ChatSessionInfo:
        for info in self.sessions(limit=1_000_000):
            if info.id == session_id:
                return info
        raise KeyError(f"no chat session {session_id}")

    def rename(self, session_id: int, title: str) -> None:
        self._conn.execute("UPDATE chat_sessions SET title = ? WHERE id = ?", (title, session_id))

    def delete_session(self, session_id: int) -> None:
        self._conn.execute("DELETE FROM chat_sessions WHERE id = ?", (session_id,))

    def messages(self, session_id: int) -> list[dict[str, Any]]:
        rows = self._conn.execute(
            "SELECT message FROM chat_messages WHERE session_id = ? ORDER BY position", (session_id,)
        ).fetchall()
        return [json.loads(row["message"]) for row in rows]

    def append(self, session_id: int, message: dict[str, Any]) -> int:
        """Add a message at the end; the first user message also names an untitled session."""
        if message.get("role") not in ("system", "user", "assistant", "tool"):
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
                "INSERT INTO chat_messages(session_id, position, message, created_at) VALUES (?, ?, ?, ?)",
                (session_id, position, payload, now),
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
