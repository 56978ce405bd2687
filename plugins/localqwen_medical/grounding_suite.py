"""The grounding suite on PubMedQA test: the 1,689 passages of its 500 items are the knowledge base
(BM25, or hybrid with MiniLM vectors when ``embed`` is on); each question is answered by the
pipeline's evidence gathering and extractive drafting (no model), then

- citations valid: every ``[Evidence n]`` in the answer names a passage that was shown;
- citation precision: the cited passages that belong to the question's own abstract;
- insufficient evidence: with the question's own abstract taken out of the pool, the share of
  answers that say the evidence is insufficient and cite nothing.

Data from ``../shared/data/pubmedqa`` (or a folder given)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from localqwen_medical.citations import parse_citations
from localqwen_medical.evidence import DEFAULT_MIN_RELEVANCE, DEFAULT_MIN_SIMILARITY, gather
from localqwen_medical.grounding import extractive_draft, validate
from localqwen_medical.router_suite import default_data_dir


class PassageIndex:
    """The PubMedQA passages behind the ``search(query, k)`` the pipeline calls (hits carry the
    PubMed id as their source)."""

    def __init__(self, texts: list[str], sources: list[str], vectors: Any = None, embedder: Any = None) -> None:
        import numpy as np

        from localqwen.retrieval.search import SearchIndex

        self.embedder = embedder
        dims = vectors.shape[1] if vectors is not None else 1
        self.index = SearchIndex(texts, vectors if vectors is not None else np.zeros((len(texts), dims), np.float32),
                                 sources=sources, chunk_ids=[f"{s}:{i}" for i, s in enumerate(sources)])

    def search(self, query: str, k: int = 10) -> list[Any]:
        if self.embedder is None:
            return self.index.search(query, None, k=k, mode="bm25")
        return self.index.search(query, self.embedder.encode_query(query), k=k, mode="hybrid")


def load_items(data_dir: str | Path | None = None) -> dict[str, dict[str, Any]]:
    path = (Path(data_dir) if data_dir else default_data_dir()) / "pubmedqa" / "test_set.json"
    if not path.is_file():
        raise FileNotFoundError(f"grounding suite data missing: {path} (see ../shared/data/README.md, or pass --data-dir)")
    return json.loads(path.read_text("utf-8"))


def build_index(items: dict[str, dict[str, Any]], *, embed: bool = False, vectors_cache: Path | None = None) -> PassageIndex:
    texts, sources = [], []
    for pubmed_id, item in items.items():
        for context in item["CONTEXTS"]:
            texts.append(context)
            sources.append(pubmed_id)
    if not embed:
        return PassageIndex(texts, sources)
    import numpy as np

    from localqwen.retrieval.embeddings import get_embedder

    embedder = get_embedder()
    if vectors_cache is not None and vectors_cache.is_file():
        vectors = np.load(vectors_cache)
    else:
        vectors = embedder.encode(texts)
        if vectors_cache is not None:
            vectors_cache.parent.mkdir(parents=True, exist_ok=True)
            np.save(vectors_cache, vectors)
    return PassageIndex(texts, sources, vectors, embedder)


def evaluate_grounding(items: dict[str, dict[str, Any]], index: PassageIndex, *, limit: int | None = None,
                       k: int = 5, min_relevance: float = DEFAULT_MIN_RELEVANCE,
                       min_similarity: float = DEFAULT_MIN_SIMILARITY,
                       progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    start = time.perf_counter()
    chosen = list(items.items())[:limit] if limit else list(items.items())
    citations = valid = own_cited = answered = 0
    insufficient_when_removed = 0
    for number, (pubmed_id, item) in enumerate(chosen, start=1):
        question = item["QUESTION"]
        for removed in (False, True):
            exclude = (lambda hit, pid=pubmed_id: hit.source == pid) if removed else None
            evidence = gather(index, [question], k=k, min_relevance=min_relevance, min_similarity=min_similarity,
                              exclude=exclude)
            draft = extractive_draft(question, evidence.passages, language="en")
            checked = validate(draft, evidence.passages)
            shown = {p.id: p for p in evidence.passages}
            ids = [i for c in parse_citations(draft) for i in c.ids]
            if removed:
                insufficient_when_removed += not evidence.passages and not ids
                continue
            answered += bool(evidence.passages)
            citations += len(ids)
            valid += sum(i in shown for i in ids)
            own_cited += sum(i in shown and shown[i].source == pubmed_id for i in ids)
            assert checked.removed_ids == [i for i in ids if i not in shown]
        if progress:
            progress(number, len(chosen))
    n = len(chosen)
    return {
        "items": n,
        "retrieval": "hybrid (MiniLM + BM25)" if index.embedder is not None else "BM25",
        "drafting": "extractive, no model",
        "answered_with_evidence": round(answered / n, 4),
        "citations": citations,
        "citations_valid": round(valid / citations, 4) if citations else 1.0,
        "citation_precision": round(own_cited / citations, 4) if citations else 0.0,
        "insufficient_when_own_abstract_removed": round(insufficient_when_removed / n, 4),
        "min_relevance": min_relevance, "min_similarity": min_similarity,
        "seconds": round(time.perf_counter() - start, 2),
    }
