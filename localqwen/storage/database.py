"""The app's SQLite database, with migrations as plain lists of SQL per feature.

Each feature (chat history, jobs, memories, knowledge bases...) owns a namespace and a list of
statements; :meth:`Database.migrate` applies the ones not yet applied, in order, each in a
transaction. WAL mode lets the UI read while a job writes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path


class Database:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self.connect() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_versions (namespace TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )

    def connect(self) -> sqlite3.Connection:
        """One connection per thread (sqlite3 connections must not cross threads)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return _Transaction(conn)  # type: ignore[return-value]

    def migrate(self, namespace: str, migrations: Sequence[str]) -> int:
        """Apply ``migrations[version:]`` for ``namespace``; return the new version."""
        with self.connect() as conn:
            row = conn.execute("SELECT version FROM schema_versions WHERE namespace = ?", (namespace,)).fetchone()
            version = row["version"] if row else 0
            for index in range(version, len(migrations)):
                conn.executescript(migrations[index])
                conn.execute(
                    "INSERT INTO schema_versions(namespace, version) VALUES(?, ?) "
                    "ON CONFLICT(namespace) DO UPDATE SET version = excluded.version",
                    (namespace, index + 1),
                )
            return len(migrations)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class _Transaction:
    """``with db.connect() as conn:`` runs the block in one transaction (BEGIN ... COMMIT/ROLLBACK)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self._conn.execute("BEGIN")
        return self._conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")
