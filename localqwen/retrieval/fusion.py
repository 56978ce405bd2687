"""Fusing the keyword and vector rankings.

- ``rrf``: reciprocal-rank fusion (Cormack et al. 2009) with per-list weights; ignores raw scores.
- ``convex``: min-max normalise each list's scores over the union of both candidate sets and mix
  them as ``alpha * dense + (1 - alpha) * bm25`` (Bruch et al. 2023 found this beats RRF when a
  little tuning data exists). Picked on the train/dev judgments, reported on test (README).
"""

from __future__ import annotations

from collections.abc import Sequence


def rrf(rankings: Sequence[Sequence[int]], *, weights: Sequence[float] | None = None, k: int = 60,
        limit: int | None = None) -> list[tuple[int, float]]:
    """Fuse ranked lists of ids into one list of (id, fused score), best first."""
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=False):
        for rank, item in enumerate(ranking):
            fused[int(item)] = fused.get(int(item), 0.0) + weight / (k + rank + 1)
    ordered = sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))
    return ordered[:limit] if limit else ordered


def convex(candidates, bm25_scores, dense_scores, *, alpha: float = 0.5,
           limit: int | None = None) -> list[tuple[int, float]]:
    """Mix min-max-normalised full score arrays over the candidate rows (any iterable of row ids)."""
    import numpy as np

    rows = np.unique(np.fromiter((int(c) for c in candidates), dtype=np.int64)) if not isinstance(
        candidates, np.ndarray) else np.unique(candidates)
    if rows.size == 0:
        return []

    def normalise(values):
        values = values[rows].astype(np.float32)
        low, high = float(values.min()), float(values.max())
        return (values - low) / (high - low) if high > low else np.zeros_like(values)

    fused = alpha * normalise(dense_scores) + (1 - alpha) * normalise(bm25_scores)
    order = np.lexsort((rows, -fused))
    if limit:
        order = order[:limit]
    return list(zip(rows[order].tolist(), fused[order].tolist(), strict=True))
