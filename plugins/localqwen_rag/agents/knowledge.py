"""Knowledge: the retrieval core behind an agent face. Returns only evidence that is plausibly
relevant: a hit counts when its embedding is close to the query (cosine >= ``min_similarity``).
Fusion scores alone are rank-based and always look "relevant", and the old "or BM25 > 0" let
any passage sharing one word through ("Who won the 2018 World Cup?" matches every abstract that
says "world"). When no hit counts, the question is not about the user's documents and the
pipeline says so instead of answering from the model's memory.

Measured on 150 SciFact train claims (phrased as questions) and 20 off-topic questions over 450
abstracts (``bench/bench_rag_real.py --offline``): cosine >= 0.3 keeps 97% of the claims and
refuses all 20 off-topic questions (0.25: 99% / 85%; 0.35: 94% / 100%). Adding "most of the
question's words occur in the passage" kept no extra claim at any bar from 0.6 to 0.9 and let one
off-topic question in 20 through, so it is not used."""

from __future__ import annotations

from dataclasses import dataclass

from localqwen.retrieval.search import Hit


@dataclass
class KnowledgeSettings:
    k: int = 5
    rerank: bool | str = False
    min_similarity: float = 0.3


def is_relevant(hit: Hit, settings: KnowledgeSettings) -> bool:
    return hit.scores.get("dense", 0.0) >= settings.min_similarity


def retrieve(kb, query: str, settings: KnowledgeSettings, *, k: int | None = None) -> list[Hit]:
    if kb is None or not query.strip():
        return []
    hits = kb.search(query, k=k or settings.k, rerank=settings.rerank)
    return [h for h in hits if is_relevant(h, settings)]


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
