"""Evidence for a medical answer: passages from the knowledge base the user picked, judged for
relevance and numbered ``[Evidence n]`` in the order they are shown.

Search scores are ranks, not relevance (a hybrid search always returns *something*), so each
passage gets a relevance of its own in 0..1: the share of the query's content words it contains
(English words, Chinese character pairs) and, when the search measured it, the embedding cosine.
A passage counts when its cosine reaches ``min_similarity`` (or its word coverage is near-complete,
``DENSE_LEXICAL_BAR``), or, with no cosine (BM25-only search), when its coverage reaches
``min_relevance``. With none left the answer must say the evidence is insufficient.

The thresholds were measured on PubMedQA test (1,689 passages, MiniLM vectors, hybrid search, the
best own-abstract and best other-abstract passage among the top 20 per question): cosine 0.6 or
coverage 0.75 keeps evidence for 94.4% of the questions with their abstract in the pool and says
"insufficient" for 89.2% with it removed; coverage alone at 0.5: 90.0% / 81.8%.
bench/bench_medical_grounding.py (``--embed`` for the hybrid case) measures the whole chain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MIN_RELEVANCE = 0.5  # word coverage, when the search gave no embedding cosine
DEFAULT_MIN_SIMILARITY = 0.6  # embedding cosine (MiniLM)
DENSE_LEXICAL_BAR = 0.75  # coverage that counts even when the cosine is low
CANDIDATES = 20  # hits looked at per query before relevance filtering

_EN_WORD = re.compile(r"[a-z][a-z0-9\-]+|\d+(?:\.\d+)?")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
# Words that carry no topic: question words, auxiliaries, generic study vocabulary.
_STOP_EN = frozenset("""
a an the and or but if of in on at to for from by with without about into over under between after before
is are was were be been being am do does did done has have had having can could should would will may might
must shall what which who whom whose when where why how whether that this these those there here it its
they them their we our you your i me my he she his her not no yes any some all more most less least than
as also such very much many does do patients patient study studies effect effects associated association
use used using role value useful predict predictive factor factors risk increase increased decrease
between among versus vs during within case cases clinical outcome outcomes result results treatment
""".split())  # noqa: SIM905 - a word list reads better as text
_STOP_ZH = frozenset(["什么", "怎么", "哪些", "为什么", "是否", "如何", "可以", "有没", "没有", "一个", "这个",
                      "请问", "医生", "我的", "我们", "你们", "多少", "应该", "需要", "能不", "会不", "怎样",
                      "有什", "么原", "是什", "的原", "原因", "吗？", "一下"])


def content_terms(text: str) -> list[str]:
    """The query's topic words: English words (stop words out, a crude 5-letter stem so "infections"
    meets "infection") and Chinese character pairs."""
    lowered = text.lower()
    found = [word[:5] if len(word) > 5 else word for word in _EN_WORD.findall(lowered)
             if word not in _STOP_EN and (len(word) > 2 or word[0].isdigit())]
    for run in _CJK_RUN.findall(lowered):
        found += [run[i:i + 2] for i in range(len(run) - 1) if run[i:i + 2] not in _STOP_ZH]
        if len(run) == 1:
            found.append(run)
    return list(dict.fromkeys(found))


def coverage(query_terms: list[str], text: str) -> float:
    """The share of ``query_terms`` found in ``text`` (0 when the query has none)."""
    if not query_terms:
        return 0.0
    passage = set(content_terms(text))
    lowered = text.lower()
    hits = sum(term in passage or (not term.isascii() and term in lowered) for term in query_terms)
    return hits / len(query_terms)


@dataclass
class Passage:
    id: int  # the evidence number shown and cited: [Evidence id]
    text: str
    source: str
    relevance: float
    chunk_id: str = ""
    query: str = ""  # which (sub-)query found it
    scores: dict[str, float] = field(default_factory=dict)

    def label(self) -> str:
        return f"[Evidence {self.id}]"

    def where(self) -> str:
        return self.source.rsplit("/", 1)[-1] if self.source else ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "source": self.source, "relevance": round(self.relevance, 3),
                "query": self.query}


@dataclass
class EvidenceSet:
    passages: list[Passage]
    best_relevance: float  # of every candidate seen, kept or not
    min_relevance: float

    @property
    def sufficient(self) -> bool:
        return bool(self.passages)

    def texts(self) -> list[str]:
        return [p.text for p in self.passages]


def relevance_of(query_terms: list[str], hit: Any, *, min_relevance: float = DEFAULT_MIN_RELEVANCE,
                 min_similarity: float = DEFAULT_MIN_SIMILARITY) -> tuple[float, bool]:
    """(a relevance in 0..1 to show, whether the passage counts as evidence)."""
    lexical = coverage(query_terms, hit.text)
    dense = hit.scores.get("dense") if getattr(hit, "scores", None) else None
    if dense is None:
        return lexical, lexical >= min_relevance
    dense = float(dense)
    return max(lexical, dense), dense >= min_similarity or lexical >= max(DENSE_LEXICAL_BAR, min_relevance)


def gather(kb: Any, queries: Iterable[str], *, k: int = 5, min_relevance: float = DEFAULT_MIN_RELEVANCE,
           min_similarity: float = DEFAULT_MIN_SIMILARITY, exclude: Any = None) -> EvidenceSet:
    """Search ``kb`` (anything with ``search(query, k)`` returning hits with ``text``, ``source``,
    ``chunk_id`` and ``scores``) for each query, keep the relevant passages, best first per query,
    at most ``k`` in all, numbered from 1. ``exclude(hit)`` drops hits (the benchmark's way of
    taking a question's own abstract out of the pool)."""
    queries = [q for q in queries if q and q.strip()]
    per_query: list[list[Passage]] = []
    best = 0.0
    for query in queries:
        terms = content_terms(query)
        found = []
        for hit in kb.search(query, k=CANDIDATES):
            if exclude is not None and exclude(hit):
                continue
            score, relevant = relevance_of(terms, hit, min_relevance=min_relevance, min_similarity=min_similarity)
            best = max(best, score)
            if relevant:
                found.append(Passage(0, hit.text, hit.source, score, hit.chunk_id, query, dict(hit.scores)))
        found.sort(key=lambda p: -p.relevance)
        per_query.append(found)
    # Round-robin over the sub-queries so every part of a complex question gets evidence.
    chosen: list[Passage] = []
    seen: set[str] = set()
    depth = 0
    while len(chosen) < k and any(depth < len(found) for found in per_query):
        for found in per_query:
            if depth < len(found) and len(chosen) < k:
                passage = found[depth]
                key = passage.chunk_id or passage.text
                if key not in seen:
                    seen.add(key)
                    chosen.append(passage)
        depth += 1
    for number, passage in enumerate(chosen, start=1):
        passage.id = number
    return EvidenceSet(chosen, best, min_relevance)


def numbered(passages: list[Passage]) -> str:
    """The passages as the drafting prompt shows them."""
    return "\n\n".join(f"[Evidence {p.id}] {p.text.strip()}" for p in passages)
