"""Each memory's token vectors, for word-by-word matching (``localqwen.retrieval.late_interaction``).

Kept in a LanceDB table of their own beside the sentence vectors (rebuildable from SQLite like
them): one row per memory and embedding model, the vectors of the memory's own words as int8
bytes with a float32 scale per token (~13 KB a turn with MiniLM). This process keeps what it read
or wrote, still int8, and turns only a query's candidates back into floats.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from localqwen.retrieval.late_interaction import dequantize, normalised, quantize
from localqwen_memory.lance_tables import open_or_create

if TYPE_CHECKING:
    import numpy as np

TOKEN_TABLE = "memory_token_vectors"

Key = tuple[int, str]  # (memory id, fingerprint): an edited memory is matched on its new words


class TokenVectors:
    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._lock = threading.RLock()
        self._kept: dict[str, dict[Key, tuple[bytes, bytes]]] = {}  # per model

    def get(self, model: str, dimension: int, keys: list[Key]) -> tuple[np.ndarray, dict[Key, tuple[int, int]]]:
        """The normalised token vectors of those of ``keys`` that are stored, one matrix for all of
        them (a query's candidates are matched in one product), and each key's rows in it."""
        with self._lock:
            kept = self._kept.get(model)
            if kept is None or sum(key not in kept for key in keys) > 16:  # first use, or another process wrote
                kept = self._kept[model] = self._read(model)
            found = list(dict.fromkeys(key for key in keys if key in kept))
            values = b"".join(kept[key][0] for key in found)
            scales = b"".join(kept[key][1] for key in found)
            counts = [len(kept[key][1]) // 4 for key in found]  # a float32 scale per token
        ends = itertools.accumulate(counts)
        spans = {key: (end - count, end) for key, count, end in zip(found, counts, ends, strict=True)}
        return normalised(dequantize(values, scales, dimension)), spans

    def put(self, model: str, keys: list[Key], tokens: list[np.ndarray]) -> None:
        """Keep and store these memories' token vectors. A failed table write (a concurrent commit)
        loses nothing this process needs: they stay kept here, and another process computes its own."""
        rows = []
        with self._lock:
            kept = self._kept.setdefault(model, {})
            for (memory_id, print_), matrix in zip(keys, tokens, strict=True):
                values, scales = quantize(matrix)
                kept[(memory_id, print_)] = (values, scales)
                rows.append({"memory_id": memory_id, "model": model, "fingerprint": print_, "tokens": values,
                             "scales": scales})
        table = self.table()
        if table is None or not rows:
            return
        try:
            table.add(rows)
        except Exception:  # noqa: BLE001 - a cache: what is missing from it is computed again when needed
            return

    def delete(self, ids: list[int]) -> None:
        with self._lock:
            for kept in self._kept.values():
                for key in [key for key in kept if key[0] in set(ids)]:
                    del kept[key]
        if self.folder is None or not (self.folder / f"{TOKEN_TABLE}.lance").exists():
            return
        self.table().delete(f"memory_id IN ({', '.join(str(int(i)) for i in ids)})")

    def drop(self) -> None:
        import lancedb

        with self._lock:
            self._kept.clear()
        if self.folder is not None and self.folder.exists():
            db = lancedb.connect(str(self.folder))
            if TOKEN_TABLE in db.table_names():
                db.drop_table(TOKEN_TABLE)

    def _read(self, model: str) -> dict[Key, tuple[bytes, bytes]]:
        table = self.table()
        if table is None:
            return {}
        data = table.to_arrow().to_pydict()
        return {(int(memory_id), print_): (values, scales)
                for memory_id, row_model, print_, values, scales in zip(
                    data["memory_id"], data["model"], data["fingerprint"], data["tokens"], data["scales"], strict=True)
                if row_model == model}

    def table(self):
        """The LanceDB table (None without a folder; the store compacts it with its vectors)."""
        import pyarrow as pa

        return open_or_create(self.folder, TOKEN_TABLE, [
            pa.field("memory_id", pa.int64()), pa.field("model", pa.string()), pa.field("fingerprint", pa.string()),
            pa.field("tokens", pa.binary()), pa.field("scales", pa.binary())])
