"""Text recall: the memories relevant to a message, put into the prompt with dates and sources.

Hybrid search (BM25 + vectors) over the persona's active facts and raw turns; the top K go into
the system prompt, each as "[#id, date, source] text", so the model can say when and where it
learned something, and the chat shows them in a "recall: text" step (the recall path used is
always visible; token recall, from consolidation/, falls back to this one).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from localqwen.vocabulary import events as ev
from localqwen_memory.prompts import Prompts
from localqwen_memory.store import MemoryHit, MemoryStore

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


def text_recall(store: MemoryStore, query: str, persona: str, prompts: Prompts, *, k: int = 6,
                exclude: set[int] | None = None) -> Recall:
    """Recall up to ``k`` memories for ``query`` and build the system prompt around them.
    ``exclude``: memory ids already recalled another way (token recall passes its own)."""
    started = time.perf_counter()
    hits = store.search(query, persona, k=k + len(exclude or ())) if k > 0 else []
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
