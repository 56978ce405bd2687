"""Hybrid search over one snapshot of a knowledge base: BM25 + dense vectors, fused by RRF,
optionally reranked by a cross-encoder.

The snapshot holds the chunk texts, metadata and a normalised vector matrix in memory; a dense
query is one matrix-vector product, which on CPU beats an ANN index up to a few hundred
thousand chunks and returns exact neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from localqwen.retrieval.bm25 import BM25Index, Tokenizer
from localqwen.retrieval.fusion import convex, rrf

if TYPE_CHECKING:
    import numpy as np

Mode = Literal["hybrid", "bm25", "dense"]


@dataclass
class Hit:
    text: str
    score: float
    source: str
    page: int | None
    heading: str
    chunk_id: str
    scores: dict[str, float] = field(default_factory=dict)  # per-stage scores / ranks, for display

    def citation(self) -> str:
        where = self.source.rsplit("/", 1)[-1]
        if self.page:
            where += f", p. {self.page}"
        if self.heading:
            where += f", {self.heading}"
        return where


@dataclass
class FusionSettings:
    """How the two lists are combined. Defaults were picked on SciFact/NFCorpus (README)."""

    method: str = "convex"  # "convex" or "rrf"
    alpha: float = 0.5  # convex: weight of the dense scores
    candidates: int = 100  # depth taken from each list
    rrf_k: int = 60
    bm25_weight: float = 1.0
    dense_weight: float = 1.0
    rerank_depth: int = 30


class DenseScorer:
    """Cosine scores of a query against every row. Large matrices may also be kept in float16 and
    multiplied by torch when that measures faster here (CPUs with AVX-512 FP16 paths run it ~3x
    faster: it is memory-bound); the choice is timed once on this machine, never assumed."""

    MIN_ROWS_FOR_HALF = 5000

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors
        self._half = None
        self.use_half: bool | None = None if len(vectors) >= self.MIN_ROWS_FOR_HALF else False

    def __call__(self, query_vector: np.ndarray) -> np.ndarray:
        import numpy as np

        query_vector = np.asarray(query_vector, dtype=np.float32)
        if self.use_half is None:
            self._choose(query_vector)
        if self.use_half:
            import torch

            return (self._half @ torch.from_numpy(query_vector).half()).float().numpy()
        return self.vectors @ query_vector

    def _choose(self, query_vector: np.ndarray) -> None:
        import time

        try:
            import torch
        except ImportError:
            self.use_half = False
            return
        self._half = torch.from_numpy(self.vectors).half()
        half_query = torch.from_numpy(query_vector).half()

        def best(fn) -> float:
            times = []
            for _ in range(5):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return min(times)

        self.use_half = best(lambda: self._half @ half_query) < 0.7 * best(lambda: self.vectors @ query_vector)
        if not self.use_half:
            self._half = None


class SearchIndex:
    def __init__(self, texts: list[str], vectors: np.ndarray, *, sources: list[str] | None = None,
                 pages: list[int | None] | None = None, headings: list[str] | None = None,
                 chunk_ids: list[str] | None = None, bm25_backend: str = "bm25s",
                 settings: FusionSettings | None = None, index_texts: list[str] | None = None,
                 tokenizer: Tokenizer | None = None) -> None:
        import numpy as np

        n = len(texts)
        self.texts = texts
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(n, -1) if n else vectors
        self.sources = sources or [""] * n
        self.pages = pages or [None] * n
        self.headings = headings or [""] * n
        self.chunk_ids = chunk_ids or [str(i) for i in range(n)]
        self.settings = settings or FusionSettings()
        if bm25_backend == "growing":  # rows can be appended (extended) without a rebuild
            from localqwen.retrieval.bm25_growing import GrowingBM25

            self.bm25 = GrowingBM25(index_texts or texts, tokenizer=tokenizer)
        else:
            self.bm25 = BM25Index(index_texts or texts, backend=bm25_backend, tokenizer=tokenizer)
        self.dense_scores = DenseScorer(self.vectors)

    def extended(self, texts: list[str], vectors: np.ndarray, *, chunk_ids: list[str],
                 index_texts: list[str] | None = None) -> SearchIndex:
        """A new index with these rows appended (the ``growing`` BM25 backend only): costs what the
        new rows cost, not a rebuild of the old ones; ``self`` is left as it was."""
        import numpy as np

        from localqwen.retrieval.bm25_growing import GrowingBM25

        if not isinstance(self.bm25, GrowingBM25):
            raise TypeError("only an index built with bm25_backend='growing' can be extended")
        grown = object.__new__(SearchIndex)
        n = len(texts)
        grown.texts = self.texts + texts
        new_vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(n, -1)
        grown.vectors = np.concatenate([self.vectors, new_vectors]) if len(self) else new_vectors
        grown.sources = self.sources + [""] * n
        grown.pages = self.pages + [None] * n
        grown.headings = self.headings + [""] * n
        grown.chunk_ids = self.chunk_ids + chunk_ids
        grown.settings = self.settings
        grown.bm25 = self.bm25.extended(index_texts or texts)
        grown.dense_scores = DenseScorer(grown.vectors)
        return grown

    def __len__(self) -> int:
        return len(self.texts)

    def dense_search(self, query_vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        if not len(self):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        sims = self.dense_scores(query_vector)
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return top, sims[top]

    def ranked_ids(self, query: str, query_vector: np.ndarray | None, *, mode: Mode = "hybrid",
                   depth: int | None = None) -> list[tuple[int, float]]:
        """(row, score) best first; hybrid scores are fused RRF scores."""
        s = self.settings
        depth = depth or s.candidates
        if mode == "bm25" or query_vector is None:
            rows, scores = self.bm25.search(query, depth)
            return list(zip(rows.tolist(), scores.tolist(), strict=False))
        if mode == "dense":
            rows, scores = self.dense_search(query_vector, depth)
            return list(zip(rows.tolist(), scores.tolist(), strict=False))
        if s.method == "convex":
            import numpy as np

            bm25_scores = self.bm25.scores(query)
            dense_scores = self.dense_scores(query_vector)
            candidates = np.concatenate([_top(bm25_scores, s.candidates, nonzero=True), _top(dense_scores, s.candidates)])
            return convex(candidates, bm25_scores, dense_scores, alpha=s.alpha, limit=depth)
        bm25_rows, _ = self.bm25.search(query, s.candidates)
        dense_rows, _ = self.dense_search(query_vector, s.candidates)
        return rrf([bm25_rows, dense_rows], weights=[s.bm25_weight, s.dense_weight], k=s.rrf_k, limit=depth)

    def search(self, query: str, query_vector: np.ndarray | None, *, k: int = 10, mode: Mode = "hybrid",
               reranker=None) -> list[Hit]:
        depth = max(k, self.settings.rerank_depth) if reranker is not None else k
        ranked = self.ranked_ids(query, query_vector, mode=mode, depth=max(depth, k))
        hits = [self._hit(row, score, mode) for row, score in ranked[:depth]]
        if mode == "hybrid" and hits and query_vector is not None:
            # Keep each list's own score too: callers judge relevance on them (RRF is rank-only).
            bm25_scores = self.bm25.scores(query)
            for hit, (row, _) in zip(hits, ranked, strict=False):
                hit.scores["bm25"] = float(bm25_scores[row])
                hit.scores["dense"] = float(self.vectors[row] @ query_vector)
        if reranker is not None and hits:
            for hit, score in zip(hits, reranker.scores(query, [h.text for h in hits]), strict=False):
                hit.scores["rerank"] = score
                hit.score = score
            hits.sort(key=lambda h: -h.score)
        return hits[:k]

    def _hit(self, row: int, score: float, mode: str) -> Hit:
        return Hit(text=self.texts[row], score=float(score), source=self.sources[row], page=self.pages[row],
                   heading=self.headings[row], chunk_id=self.chunk_ids[row], scores={mode: float(score)})


def _top(scores, k: int, *, nonzero: bool = False):
    """Row ids of the ``k`` highest scores (unordered). ``nonzero``: only rows scoring above 0, which
    for BM25 is usually a small subset, so the partition runs over far fewer values."""
    import numpy as np

    rows = np.flatnonzero(scores > 0) if nonzero else None
    values = scores[rows] if rows is not None else scores
    k = min(k, len(values))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    top = np.argpartition(-values, k - 1)[:k] if k < len(values) else np.arange(len(values))
    return rows[top] if rows is not None else top
