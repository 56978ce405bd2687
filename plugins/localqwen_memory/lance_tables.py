"""The memory store's LanceDB tables (sentence vectors, token vectors): caches beside SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def open_or_create(folder: Path | None, name: str, fields: list[Any]):
    """The table ``name`` under ``folder``, created with ``fields`` (pyarrow fields) the first time;
    None without a folder (a store without vectors on disk)."""
    import lancedb
    import pyarrow as pa

    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    db = lancedb.connect(str(folder))
    if name in db.table_names():
        return db.open_table(name)
    try:
        return db.create_table(name, schema=pa.schema(fields))
    except (OSError, ValueError):  # another process created it first
        return db.open_table(name)
