"""Knowledge: the retrieval core behind an agent face. Returns only evidence that is plausibly
relevant: a hit counts when the query's keywords occur in it (BM25 > 0) or its embedding is close
(cosine >= ``min_similarity``); fusion scores alone are rank-based and always look "relevant"."""

from __future__ import annotations

from dataclasses import dataclass

from localqwen.retrieval.search import Hit


@dataclass
class KnowledgeSettings:
    k: int = 5
    rerank: bool | str = False
    min_similarity: float = 0.3


def is_relevant(hit: Hit, min_similarity: float) -> bool:
    return hit.scores.get("bm25", 0.0) > 0 or hit.scores.get("dense", 0.0) >= min_similarity


def retrieve(kb, query: str, settings: KnowledgeSettings, *, k: int | None = None) -> list[Hit]:
    if kb is None or not query.strip():
        return []
    hits = kb.search(query, k=k or settings.k, rerank=settings.rerank)
    return [h for h in hits if is_relevant(h, settings.min_similarity)]


def merge(*lists: list[Hit]) -> list[Hit]:
    """Evidence from several lookups, first occurrence wins, original order kept."""
    seen: set[str] = set()
    merged = []
    for hits in lists:
        for hit in hits:
            if hit.chunk_id not in seen:
                seen.add(hit.chunk_id)
                merged.append(hit)
    return merged
