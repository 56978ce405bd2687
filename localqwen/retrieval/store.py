"""Chunk storage: one LanceDB table per knowledge base, with the source-of-truth bookkeeping
(knowledge bases, their files and hashes, and which table version is "good") in SQLite.

Crash safety: a batch is written to LanceDB first (each LanceDB commit is atomic and versioned),
then one SQLite transaction records the files and the new table version. Whoever opens the table
next compares LanceDB's latest version with the recorded one and restores the recorded version if
a process died in between, so readers only ever see the last fully committed batch.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from localqwen.storage.database import Database

NAMESPACE = "retrieval"
MIGRATIONS = [
    """
    CREATE TABLE knowledge_bases (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        embedding_model TEXT NOT NULL,
        dimension INTEGER NOT NULL,
        chunk_tokens INTEGER NOT NULL,
        chunk_overlap INTEGER NOT NULL,
        table_name TEXT NOT NULL,
        table_version INTEGER,
        created_at REAL NOT NULL
    );
    CREATE TABLE knowledge_base_files (
        kb_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        file_id TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        chunks INTEGER NOT NULL,
        encoding TEXT,
        added_at REAL NOT NULL,
        PRIMARY KEY (kb_id, path)
    )
    """,
]


def chunk_schema(dimension: int) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([
        pa.field("chunk_id", pa.string()),
        pa.field("file_id", pa.string()),
        pa.field("source", pa.string()),
        pa.field("page", pa.int32()),
        pa.field("heading", pa.string()),
        pa.field("text", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dimension)),
    ])


class ChunkStore:
    """The LanceDB side of one knowledge base, pinned to its recorded good version."""

    _open_lock = threading.Lock()

    def __init__(self, folder: Path, table_name: str, dimension: int) -> None:
        self.folder = Path(folder)
        self.table_name = table_name
        self.dimension = dimension

    def _db(self):
        import lancedb

        self.folder.mkdir(parents=True, exist_ok=True)
        return lancedb.connect(str(self.folder))

    def open(self, recorded_version: int | None):
        """The table at its last good version (created empty on first use). Returns (table, version)."""
        with self._open_lock:
            db = self._db()
            if self.table_name not in db.table_names():
                table = db.create_table(self.table_name, schema=chunk_schema(self.dimension))
                return table, table.version
            table = db.open_table(self.table_name)
            if recorded_version is not None and table.version != recorded_version:
                # A writer died after its LanceDB commit but before recording it: roll back.
                table.checkout(recorded_version)
                table.restore()
            return table, table.version

    def write(self, table, *, delete_file_ids: list[str], rows: list[dict[str, Any]] | pa.Table) -> int:
        """Delete the old chunks of replaced/removed files and append new rows; return the new version."""
        if delete_file_ids:
            quoted = ", ".join("'" + fid.replace("'", "''") + "'" for fid in delete_file_ids)
            table.delete(f"file_id IN ({quoted})")
        if len(rows):
            table.add(rows)
        return table.version

    def snapshot(self, table) -> pa.Table:
        return table.to_arrow()

    def drop_table(self) -> None:
        db = self._db()
        if self.table_name in db.table_names():
            db.drop_table(self.table_name)

    def drop(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def migrate(database: Database) -> None:
    database.migrate(NAMESPACE, MIGRATIONS)
