"""Reciprocal-rank fusion (Cormack et al. 2009) with per-list weights.

RRF ignores raw scores (BM25 and cosine live on different scales) and rewards documents that
rank high in either list. Weights let the better list count more (see the README benchmark).
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
