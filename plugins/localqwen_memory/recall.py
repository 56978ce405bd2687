"""Text recall: the memories relevant to a message, put into the prompt with dates and sources.

Hybrid search (BM25 + vectors) over the persona's active facts and raw turns; the top K go into
the system prompt, each as "[#id, date, source] text", so the model can say when and where it
learned something, and the chat shows them in a "recall: text" step (the recall path used is
always visible; token recall, from consolidation/, falls back to this one).

The ranking (:func:`rank_memories`) takes the store's hybrid candidates (BM25 and MiniLM cosine,
mixed by the store) and adds to each memory part of its chat session's score (the score of the
session's best memory): the evidence for a question tends to sit in one or two conversations, and
a session that is on topic lifts its turns above stray matches elsewhere. Measured on LoCoMo
(README, "Memory chat"), chosen on conversations 1-5 only and checked on 6-10: with MiniLM the
session share raised all@10 from 70.8% to 72.4% on the tuning half and from 65.2% to 66.6% on the
held-out half (``bench_memory_locomo.py --mode hybrid [--session-weight 0]``). Tried there and
left out because they did not help: re-mixing BM25 and cosine with other weights, a penalty per
further memory of a session already ranked (meant for multi-hop questions; it cost more
single-hop answers than it gained), a penalty on neighbouring turns, reserving the last slots for
unseen sessions, a session's score from its best 2-3 memories, its whole text, its mean vector or
rank votes, and pseudo-relevance feedback (on the query vector, or BM25 terms of the top hits).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from localqwen.vocabulary import events as ev
from localqwen_memory.prompts import Prompts
from localqwen_memory.store import MemoryHit, MemoryRecord, MemoryStore

PATH = "text"
TOKEN_PATH = "token"  # a consolidated model picked the memory itself (consolidation/token_recall.py)


@dataclass
class Recall:
    """What was recalled for one message and the system prompt built from it."""

    path: str
    hits: list[MemoryHit]
    system_prompt: str
    elapsed_ms: float = 0.0
    notes: list[str] = field(default_factory=list)

    def step(self) -> ev.Step:
        """The chat's "recall: <path>" step: which memories went into the prompt."""
        if self.hits:
            detail = "\n".join(f"#{h.memory.id} [{memory_date(h.memory.valid_from)}, {h.memory.source}, "
                               f"{h.memory.kind}] {h.memory.statement}" for h in self.hits)
        else:
            detail = "nothing relevant remembered"
        if self.notes:
            detail += "\n" + "\n".join(self.notes)
        return ev.Step(step="recall", title=f"recall: {self.path}", status="finished", detail=detail,
                       elapsed_s=round(self.elapsed_ms / 1000, 4))

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "memories": [h.memory.id for h in self.hits], "elapsed_ms": self.elapsed_ms}


def memory_date(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(timestamp))


@dataclass(frozen=True)
class RankSettings:
    """How :func:`rank_memories` re-scores the store's candidates (chosen on LoCoMo 1-5)."""

    candidates: int = 100  # memories taken from the store's hybrid search before re-scoring
    session_weight: float = 0.4  # share of the session's score added to each of its memories


RANKING = RankSettings()


def session_key(memory: MemoryRecord) -> tuple[str, int]:
    """The chat session a memory came from; memories added by hand stand alone."""
    if memory.source_session is None:
        return ("memory", memory.id)
    return ("session", memory.source_session)


def rank_memories(store: MemoryStore, query: str, persona: str, *, k: int = 6, mode: str = "hybrid",
                  settings: RankSettings = RANKING) -> list[MemoryHit]:
    """The ``k`` memories most relevant to ``query``, best first (see the module's docstring)."""
    import numpy as np

    if k <= 0:
        return []
    hits = store.search(query, persona, k=max(k, settings.candidates), mode=mode)
    if len(hits) <= 1:
        return hits[:k]
    # The store's own score (hybrid: its convex mix of BM25 and cosine, min-max over a wider
    # candidate set than ours; re-mixing over our 100 measured worse), scaled to 0-1 here.
    scores = _min_max(np.array([h.score for h in hits], dtype=np.float64))
    keys = [session_key(h.memory) for h in hits]
    numbers = {key: number for number, key in enumerate(dict.fromkeys(keys))}
    sessions = np.array([numbers[key] for key in keys])
    if settings.session_weight:
        best = np.full(len(numbers), -np.inf)
        np.maximum.at(best, sessions, scores)
        scores = scores + settings.session_weight * best[sessions]
    order = np.argsort(-scores, kind="stable")[:k]  # ties keep the store's order
    return [MemoryHit(memory=hits[i].memory, score=float(scores[i]), scores={**hits[i].scores, "recall": float(scores[i])})
            for i in order.tolist()]


def _min_max(values):
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else values * 0.0


def text_recall(store: MemoryStore, query: str, persona: str, prompts: Prompts, *, k: int = 6,
                exclude: set[int] | None = None) -> Recall:
    """Recall up to ``k`` memories for ``query`` and build the system prompt around them.
    ``exclude``: memory ids already recalled another way (token recall passes its own)."""
    started = time.perf_counter()
    hits = rank_memories(store, query, persona, k=k + len(exclude or ())) if k > 0 else []
    hits = [h for h in hits if h.memory.id not in (exclude or set())][:k]
    recall = text_recall_prompt(hits, persona, prompts)
    recall.elapsed_ms = (time.perf_counter() - started) * 1000
    return recall


def text_recall_prompt(hits: list[MemoryHit], persona: str, prompts: Prompts) -> Recall:
    """The system prompt around recalled memories (both paths put them in the prompt as text)."""
    today = time.strftime("%Y-%m-%d")
    if hits:
        # Newest first, as the prompt promises: on a contradiction the newer memory wins.
        ordered = sorted(hits, key=lambda h: -h.memory.valid_from)
        lines = "\n".join(prompts.format("recall", "memory", id=h.memory.id, date=memory_date(h.memory.valid_from),
                                         source=h.memory.source, text=h.memory.statement) for h in ordered)
        system = prompts.format("recall", "system", today=today, persona=persona, memories=lines)
    else:
        system = prompts.format("recall", "empty", today=today, persona=persona)
    return Recall(PATH, hits, system)
