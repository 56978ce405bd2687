"""A document-vector cache around an embedder, for evaluations that rebuild their store every run.

The LoCoMo suite puts ~5,900 turns into a throw-away memory store each run; embedding them with
MiniLM takes ~10 minutes on a loaded 2-core CPU, while the questions take seconds. In the chat the
same vectors are computed once and kept in LanceDB, so caching them here (one ``.npz`` file keyed by
the embedder name and a hash of each text) measures what the chat does per query: queries are
always encoded live (``encode_query`` passes through, and is what the latency includes).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class CachedEmbedder:
    """Wraps an embedder (``name``, ``dimension``, ``encode``, ``encode_query``, and for word-by-word
    matching ``encode_with_tokens`` / ``encode_query_tokens``): document vectors and token vectors
    come from ``folder`` when cached there, else from the embedder (and are saved by :meth:`save`)."""

    def __init__(self, embedder: Any, folder: Path) -> None:
        import numpy as np

        self.embedder = embedder
        self.name = embedder.name
        self.dimension = embedder.dimension
        self.file = Path(folder) / f"vectors-{text_key(self.name)[:12]}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        if self.file.is_file():
            with np.load(self.file) as data:
                keys, vectors = data["keys"], data["vectors"]
            if vectors.ndim == 2 and vectors.shape[1] == self.dimension:  # else a stale file: rebuilt
                self._vectors = {str(key): vector for key, vector in zip(keys, vectors, strict=True)}
        # token vectors per (text, leading word pieces), float16: one array of all rows and each text's row span
        self.tokens_file = Path(folder) / f"tokens-{text_key(self.name)[:12]}.npz"
        self._tokens: dict[str, np.ndarray] = {}
        if self.tokens_file.is_file():
            with np.load(self.tokens_file) as data:
                keys, rows, ends = data["keys"], data["rows"], data["ends"]
            if rows.ndim == 2 and rows.shape[1] == self.dimension:
                starts = np.concatenate([[0], ends[:-1]])
                self._tokens = {str(key): rows[start:end] for key, start, end in zip(keys, starts, ends, strict=True)}

    def __len__(self) -> int:
        return len(self._vectors)

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        import numpy as np

        keys = [text_key(text) for text in texts]
        missing = sorted({key: text for key, text in zip(keys, texts, strict=True) if key not in self._vectors}.items())
        if missing:
            fresh = self.embedder.encode([text for _, text in missing], **kwargs)
            self._vectors.update({key: vector for (key, _), vector in zip(missing, fresh, strict=True)})
            self._dirty = True
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._vectors[key] for key in keys]).astype(np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        return self.embedder.encode_query(text)  # never cached: the per-query latency includes it

    def encode_query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        return self.embedder.encode_query_tokens(text)  # never cached, as encode_query

    def leading_pieces(self, text: str) -> int:
        return self.embedder.leading_pieces(text)

    def encode_with_tokens(self, texts: list[str], leading: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
        import numpy as np

        keys = [f"{text_key(text)}:{count}" for text, count in zip(texts, leading, strict=True)]
        missing = {key: (text, count) for key, text, count in zip(keys, texts, leading, strict=True)
                   if key not in self._tokens or text_key(text) not in self._vectors}
        if missing:
            fresh, tokens = self.embedder.encode_with_tokens([text for text, _ in missing.values()],
                                                             [count for _, count in missing.values()])
            for (key, (text, _)), vector, matrix in zip(missing.items(), fresh, tokens, strict=True):
                self._vectors[text_key(text)] = vector
                self._tokens[key] = matrix.astype(np.float16)
            self._dirty = True
        vectors = np.stack([self._vectors[text_key(text)] for text in texts]).astype(np.float32) if texts else \
            np.zeros((0, self.dimension), dtype=np.float32)
        return vectors, [self._tokens[key].astype(np.float32) for key in keys]

    def save(self) -> None:
        """Write the cache if anything was added (atomically: a stopped run leaves the old file)."""
        import numpy as np

        if not self._dirty:
            return
        self.file.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self._vectors)
        # A partial file of its own per process: two runs sharing the cache may save at once.
        partial = self.file.with_suffix(f".{os.getpid()}.partial.npz")
        np.savez(partial, keys=np.array(keys), vectors=np.stack([self._vectors[key] for key in keys]))
        partial.replace(self.file)
        if self._tokens:
            keys = sorted(self._tokens)
            partial = self.tokens_file.with_suffix(f".{os.getpid()}.partial.npz")
            np.savez(partial, keys=np.array(keys), rows=np.concatenate([self._tokens[key] for key in keys]),
                     ends=np.cumsum([len(self._tokens[key]) for key in keys]))
            partial.replace(self.tokens_file)
        self._dirty = False
