"""Chunk storage: one LanceDB table per knowledge base, with the source-of-truth bookkeeping
(knowledge bases, their files and hashes, and which table version is "good") in SQLite.

Crash safety: a batch is written to LanceDB first (each LanceDB commit is atomic and versioned),
then one SQLite transaction records the files and the new table version. Readers open the table at
the recorded version, so they only ever see the last fully committed batch.

Two processes: writers of one knowledge base take its writer lock (a lock file, see
``localqwen.storage.file_lock``) around their commit, so batches never interleave. LanceDB being
ahead of the recorded version then means one of two things: a live writer is between its two
steps (it holds the lock), or a writer died there (the OS released its lock). Only whoever holds
the lock may restore the recorded version, so recovery undoes a dead writer's half-commit and
never a live writer's.
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

    def open(self, recorded_version: int | None, *, repair: bool):
        """The table at its last good version. Returns (table, version); (None, None) for a reader
        when nothing was committed yet.

        ``repair`` is for the holder of the writer lock only: it creates the table on first use and
        restores the recorded version over a dead writer's unrecorded commit. Without it the table
        is only viewed at the recorded version (checkout), changing nothing on disk.
        """
        with self._open_lock:
            db = self._db()
            exists = self.table_name in db.table_names()
            if not repair:
                if recorded_version is None or not exists:
                    return None, None
                table = db.open_table(self.table_name)
                if table.version != recorded_version:
                    table.checkout(recorded_version)  # a live writer may be mid-commit: look, don't touch
                return table, recorded_version
            if exists and recorded_version is None:
                db.drop_table(self.table_name)  # a first batch that died before it was recorded
                exists = False
            if not exists:
                table = db.create_table(self.table_name, schema=chunk_schema(self.dimension))
                return table, table.version
            table = db.open_table(self.table_name)
            if table.version != recorded_version:
                # We hold the writer lock, so whoever committed past the record died before recording.
                table.checkout(recorded_version)
                table.restore()
            return table, table.version

    def empty(self) -> pa.Table:
        return chunk_schema(self.dimension).empty_table()

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
