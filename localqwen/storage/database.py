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
        self.connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_versions (namespace TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )

    @property
    def connection(self) -> sqlite3.Connection:
        """This thread's connection (sqlite3 connections must not cross threads), autocommit mode."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def connect(self) -> _Transaction:
        """``with db.connect() as conn:`` runs the block in one transaction."""
        return _Transaction(self.connection)

    def migrate(self, namespace: str, migrations: Sequence[str]) -> int:
        """Apply ``migrations[version:]`` for ``namespace``, each atomically; return the new version."""
        conn = self.connection
        row = conn.execute("SELECT version FROM schema_versions WHERE namespace = ?", (namespace,)).fetchone()
        version = row["version"] if row else 0
        quoted = namespace.replace("'", "''")
        for index in range(version, len(migrations)):
            # executescript() commits first, so the whole step (and its version bump) is one script.
            script = (
                f"BEGIN IMMEDIATE;\n{migrations[index]};\n"
                f"INSERT INTO schema_versions(namespace, version) VALUES('{quoted}', {index + 1}) "
                "ON CONFLICT(namespace) DO UPDATE SET version = excluded.version;\nCOMMIT;"
            )
            try:
                conn.executescript(script)
            except sqlite3.Error:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return max(version, len(migrations))

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class _Transaction:
    """``with db.connect() as conn:`` runs the block in one write transaction (BEGIN IMMEDIATE ... COMMIT/ROLLBACK)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> sqlite3.Connection:
        # IMMEDIATE: take the write lock now, waiting up to the connection's timeout. A plain BEGIN
        # reads first and upgrades later; in WAL mode that upgrade fails at once ("database is
        # locked") when another writer committed in between, and no busy timeout helps.
        self._conn.execute("BEGIN IMMEDIATE")
        return self._conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")
