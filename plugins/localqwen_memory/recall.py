"""Text recall: the memories relevant to a message, put into the prompt with dates and sources.

Hybrid search (BM25 + vectors) over the persona's active facts and raw turns; the top K go into
the system prompt, each as "[#id, date, source] text", so the model can say when and where it
learned something, and the chat shows them in a "recall: text" step (the recall path used is
always visible; token recall, from consolidation/, falls back to this one).

The ranking (:func:`rank_memories`) takes the store's hybrid candidates (BM25 and MiniLM cosine,
mixed by the store) and re-scores them. Measured on LoCoMo (README, "Memory chat"), every weight
chosen on conversations 1-5 only (by all@10 + multi-hop all@10) and checked on 6-10
(``bench_memory_locomo.py --mode hybrid``, its ``--subject-weight`` / ``--session-weight`` /
``--neighbour-penalty`` ablations):

1. *The person asked about.* When the question names exactly one person that memories are about
   (a ``subject`` written as a name, as "Melanie" in "What has Melanie painted?"), the name leaves
   the search query, since it matches half the store and drowns the topic words, and the memories
   about that person gain ``subject_weight``: the answer is what *they* said or did. This is most
   of the gain: multi-hop 15.6% -> 27.7%, all@10 69.5% -> 72.8% (all ten conversations).
2. *Neighbours.* Each turn is indexed with its neighbouring turns, so a hit's neighbours score
   almost as high and fill the top slots with one exchange. Memories are taken greedily, and each
   pick lowers its adjacent memories of the same session by ``neighbour_penalty``, leaving room
   for evidence elsewhere (a multi-hop question needs all of its evidence in the top 10). On 1-5
   it raised multi-hop from 28.2% to 30.3% for 0.5 point of all@10; on 6-10 it did not help
   (multi-hop 27.1% -> 26.4%, all@10 71.4% -> 70.2%).
3. *The session.* ``session_weight`` adds part of a session's best score to each of its memories;
   before step 1 a share of 0.4 raised all@10 by 1.5 points, with step 1 it no longer helps on 1-5
   (0 chosen; the knob stays for ablations). It never changes session all@5: the sessions' order
   is their best memories' order either way.
4. *The date.* A question naming a calendar day or month ("on 3 June, 2023", "in January 2022";
   :mod:`named_period`) lifts the memories dated then, or up to ``date_slack_days`` around it
   (people tell of a Saturday on the Monday), by ``date_weight``. 179 of LoCoMo's 1,536 questions
   name one; chosen on 1-5 (0.3 and 3 days; 0.5 scored the same there): session all@5 84.3% ->
   84.9%, and on 6-10 81.7% -> 82.6% (temporal 88.2% -> 91.0%), all@10 71.9% -> 72.5%.
5. *Word by word.* Each candidate gains ``token_weight`` times its word-by-word match with the
   query (``localqwen.retrieval.late_interaction``: each topic word's best cosine among the
   memory's own MiniLM token vectors, averaged; min-max over the candidates), which finds "kayaking"
   for "hobbies" where one sentence vector each does not. Chosen on 1-5 among 0.5 / 1 / 1.5 with
   ``session_token_weight`` (the same match over all of a session's candidates, added to each of
   its memories) among 0 / 0.25 / 0.5 / 1: 1 and 0. On 6-10: all@10 70.9% -> 74.0%, multi-hop
   26.4% -> 30.7%, session all@5 82.6% -> 84.3%. The session's match at 0.5 gave session all@5
   84.8% on all ten but cost all@10 and multi-hop on 1-5, so it stays an ablation knob.
6. *The reader.* The store's vectors and token vectors come from bge-small-en-v1.5 (int8 ONNX,
   ``localqwen.retrieval.onnx_embedder``; MiniLM where it is not installed), a stronger English
   retriever than MiniLM. With it (2026-11-27, all ten) the weights of step 5 and the candidate
   count were chosen again on 1-5, this time by all@10 + multi-hop + session all@5 (the one goal
   still missed, the other two met with room), among candidates 100 / 200, ``token_weight`` 1 / 1.5
   and ``session_token_weight`` 0 / 0.25 / 0.5 / 0.75 / 1: 200, 1.5 and 0.5. Session all@5 84.3% ->
   85.4% (1-5 84.3% -> 85.7%, held-out 6-10 84.3% -> 85.1%), all@10 75.0% -> 75.9%, multi-hop
   32.6% -> 31.9% (``bench_memory_locomo.py``); MiniLM with these weights: 84.6%, 75.5%, 30.9%.
   bge with the MiniLM weights: 84.8%; bge's cosine added to MiniLM's ranking as a third score
   (0.25-1.5): 84.4-84.8%; MiniLM's cosine added to bge's: 84.6-84.8%.

Tried and left out because they did not help on conversations 1-5 (or helped there only): re-mixing
BM25 and cosine with other weights, a penalty per further memory of a session already ranked
(with or without a gate on "gathering" questions such as "what activities ..."), reserving the last
slots for unseen sessions, a session's score from its best 2-3 memories, its whole text as one BM25
document, its mean vector or rank votes (session all@5 stayed at 82-84%), a vector-similarity MMR
between picks, 200-400 candidates instead of 100, a BM25 over the bare statements beside the
contextual one, taking both names out of a question naming two people, and pseudo-relevance
feedback (on the query vector, or BM25 terms of the top hits). For session all@5 alone (82.6-83.7%
on all ten, none better than the ranking above): a session's score from the log-sum-exp of its
memories' scores, MiniLM cosine of the bare statement (without its context) added to each memory,
other subject weights or BM25/cosine mixes, and reciprocal-rank fusion of the sessions' order with
a BM25 over each session's text (all of it, or only the named person's turns) or with the cosine
of its best three statements; a learned session ranker (gradient-boosted trees over 22 features of
each session, cross-fitted on the two halves: 84.0-84.6%, unsteady across settings); and, as an upper
bound, LoCoMo's annotated session summaries fused in as a ranking of sessions (83.0-83.9%).
Also tried on all ten (2026-11-24, session all@5 against 83.7%): the query's vector from the question
without its question words ("Melanie painted" for "What has Melanie painted?": 83.1-83.2%, MiniLM
matches questions to answers better as questions); a question naming two people ranked once for
each as the subject and the two lists interleaved (83.6-83.7%); turns indexed with two or three
neighbours a side instead of one (83.5%, 83.1%; multi-hop all@10 fell to 22% and 20%); BM25's k1
0.8 / 1.8 or b 0.4 / 0.9 instead of 1.2 and 0.75 (83.5-83.9%, within a few questions); the BM25
query expanded by each word's nearest words of the conversations' vocabulary in MiniLM (up to five
with cosine >= 0.55-0.6, weighted 0.3-0.5 x cosine: 83.6-83.7%, multi-hop all@10 28.4% -> 27.3%).
And (2026-11-24, re-scored offline on the ranked candidates): picking the five sessions greedily for
the question words they cover that the sessions already picked do not (a set cover over each
session's best 3-10 memories, weighted 0.05-2 against the score): within 0.3 point either way.
And (2026-11-25, session all@5 against 84.3%): a bonus by the answer a question asks for, for
memories that hold one ("When ..." / "Which year ..." -> a time expression, "How many ..." -> a
number, "Where ..." / "Which city ..." -> a proper noun; 0.05-0.5): +0.1 point or less each, within
the noise; step 4 also lifting memories whose relative times (``relative_dates``: "last Saturday"
said on 25 May) fall in the day or month the question names: no change on 1-5; word-by-word
weights 0.5 / 0.5 (the best session all@5 on 1-5): 84.5% on all ten, 84.1% on 6-10.
And (2026-11-25, all ten): each sentence of a multi-sentence turn (four words or more) indexed as a
memory of its own beside the turn, so a long turn's topics do not blur into one vector: session all@5
84.0%, all@10 72.6% (75.0% without), multi-hop 27.3% (32.6%); the sentences crowd the top ten.
"""

from __future__ import annotations

import re
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from localqwen.vocabulary import events as ev
from localqwen_memory.named_period import named_period, within
from localqwen_memory.prompts import Prompts
from localqwen_memory.relative_dates import MONTHS, with_dates
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
                               f"{h.memory.kind}] {dated_statement(h.memory)}" for h in self.hits)
        else:
            detail = "nothing relevant remembered"
        if self.notes:
            detail += "\n" + "\n".join(self.notes)
        return ev.Step(step="recall", title=f"recall: {self.path}", status="finished", detail=detail,
                       elapsed_s=round(self.elapsed_ms / 1000, 4))

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "memories": [h.memory.id for h in self.hits], "elapsed_ms": self.elapsed_ms}


def memory_date(timestamp: float) -> str:
    """A memory's date in tables and the recall step (ISO: sorts and scans in a column)."""
    return time.strftime("%Y-%m-%d", time.localtime(timestamp))


def dated_statement(memory: MemoryRecord) -> str:
    """A memory's statement as recall shows it: each relative time ("last Friday") followed by the
    date it meant, from when the memory was said (``relative_dates``); the stored text is unchanged."""
    return with_dates(memory.statement, memory.valid_from)


def spoken_date(timestamp: float) -> str:
    """A date as people write it ("7 May 2023"), for prompts: a model copies the form it is shown,
    and an ISO date in an answer ("2023-05-07") reads badly and shares no word with "7 May 2023"
    (on LoCoMo's temporal questions, ISO dates in the prompt cost most of the F1)."""
    moment = time.localtime(timestamp)
    return f"{moment.tm_mday} {MONTHS[moment.tm_mon - 1]} {moment.tm_year}"


@dataclass(frozen=True)
class RankSettings:
    """How :func:`rank_memories` re-scores the store's candidates (chosen on LoCoMo 1-5)."""

    candidates: int = 200  # memories taken from the store's hybrid search before re-scoring
    subject_weight: float = 0.5  # added to memories about the one person the query names
    neighbour_penalty: float = 0.1  # taken off a memory per adjacent memory of its session ranked before it
    session_weight: float = 0.0  # share of the session's best score added to each of its memories
    date_weight: float = 0.3  # added to memories dated in the day or month the query names
    date_slack_days: int = 3  # how far outside that day or month a memory still counts
    token_weight: float = 1.5  # times the memory's word-by-word match with the query (0-1 over the candidates)
    session_token_weight: float = 0.5  # times its session's word-by-word match, added to each memory of the session


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

    if k <= 0 or not query.strip():
        return []
    named = named_subject(store, query, persona) if settings.subject_weight else None
    search_query = without_name(query, named) if named else query
    hits = store.search(search_query, persona, k=max(k, settings.candidates), mode=mode)
    if len(hits) <= 1:
        return hits[:k]
    # The store's own score (hybrid: its convex mix of BM25 and cosine, min-max over a wider
    # candidate set than ours; re-mixing over our 100 measured worse), scaled to 0-1 here.
    scores = _min_max(np.array([h.score for h in hits], dtype=np.float64))
    if named:
        scores = scores + settings.subject_weight * np.array([is_about(h.memory, named) for h in hits])
    period = named_period(query) if settings.date_weight else None
    if period:
        scores = scores + settings.date_weight * np.array(
            [within(h.memory.valid_from, period, settings.date_slack_days) for h in hits])
    keys = [session_key(h.memory) for h in hits]
    numbers = {key: number for number, key in enumerate(dict.fromkeys(keys))}
    sessions = np.array([numbers[key] for key in keys])
    if all(h.token_match is not None for h in hits):
        scores = scores + _token_scores(hits, sessions, len(numbers), settings)
    if settings.session_weight:
        best = np.full(len(numbers), -np.inf)
        np.maximum.at(best, sessions, scores)
        scores = scores + settings.session_weight * best[sessions]
    order, picked = _pick(scores, sessions, hits, k, settings.neighbour_penalty)
    return [MemoryHit(memory=hits[i].memory, score=score, scores={**hits[i].scores, "recall": score})
            for i, score in zip(order, picked, strict=True)]


def _token_scores(hits: list[MemoryHit], sessions, count: int, settings: RankSettings):
    """Step 5 (module docstring): each memory's word-by-word match (the mean over the query's
    topic words of their best cosine among its words), and its session's: each word's best over all
    of the session's candidates, so a session that answers different words in different turns
    scores as a whole. Both min-max scaled over the candidates."""
    import numpy as np

    matches = np.stack([h.token_match for h in hits]) if len(hits[0].token_match) else np.zeros((len(hits), 1))
    added = settings.token_weight * _min_max(matches.mean(axis=1))
    if settings.session_token_weight:
        best = np.full((count, matches.shape[1]), -np.inf)
        np.maximum.at(best, sessions, matches)
        added = added + settings.session_token_weight * _min_max(best.mean(axis=1))[sessions]
    return added


def _pick(scores, sessions, hits: list[MemoryHit], k: int, penalty: float) -> tuple[list[int], list[float]]:
    """Greedy top ``k``: each pick lowers the adjacent memories of its session by ``penalty``.
    Returns the picked rows and their scores when picked (non-increasing: penalties only lower)."""
    import numpy as np

    if not penalty:
        best_first = np.argsort(-scores, kind="stable")[:k].tolist()  # ties keep the store's order
        return best_first, [float(scores[i]) for i in best_first]
    messages = np.array([h.memory.source_message if h.memory.source_message is not None else -10 for h in hits])
    current = scores.astype(np.float64).copy()
    taken = np.zeros(len(hits), dtype=bool)
    order: list[int] = []
    picked: list[float] = []
    for _ in range(min(k, len(hits))):
        row = int(np.argmax(np.where(taken, -np.inf, current)))  # the first of equals: the store's order
        order.append(row)
        picked.append(float(current[row]))
        taken[row] = True
        if messages[row] >= 0:
            current -= penalty * ((sessions == sessions[row]) & (np.abs(messages - messages[row]) <= 1))
    return order, picked


# The persona's subjects as name patterns, per search index (the store builds a new one after a write).
_SUBJECTS: weakref.WeakKeyDictionary[Any, dict[str, re.Pattern[str]]] = weakref.WeakKeyDictionary()


def named_subject(store: MemoryStore, query: str, persona: str) -> str | None:
    """The one person the query names, among the subjects of the persona's memories (the store
    keeps them lower-case): a subject counts as named when the query writes it capitalised ("Ann",
    "Mary Jane"), so topic words ("coffee") and the extractor's "user" never do. None when the query
    names none of them, or several."""
    snapshot = store.snapshot(persona)
    patterns = _SUBJECTS.get(snapshot.index)
    if patterns is None:
        names = {m.subject.strip() for m in snapshot.records if m.subject and m.subject.strip()} - {"user"}
        patterns = {name: _name_pattern(name) for name in names if re.search(r"\w", name)}
        _SUBJECTS[snapshot.index] = patterns
    found = [name for name, pattern in patterns.items() if pattern.search(query)]
    return found[0] if len(found) == 1 else None


def _name_pattern(subject: str) -> re.Pattern[str]:
    """The subject as a capitalised name, with or without a possessive."""
    name = " ".join(word[:1].upper() + word[1:] for word in subject.split())
    return re.compile(rf"\b{re.escape(name)}(?:'s|’s)?(?!\w)")


def is_about(memory: MemoryRecord, subject: str) -> bool:
    """Whether a memory is about the named subject: its own subject, or, for a memory without one
    (the chat's raw turns), its text naming them; the name left the query, so such a turn would
    otherwise lose the match it had."""
    if memory.subject:
        return memory.subject.casefold() == subject.casefold()
    return _name_pattern(subject).search(memory.text) is not None


def without_name(query: str, subject: str) -> str:
    """The query without the named subject (and its possessive); the query itself if nothing else
    is left."""
    rest = re.sub(r"\s+", " ", _name_pattern(subject).sub(" ", query)).strip()
    return rest if re.search(r"\w", rest) else query


def _min_max(values):
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else values * 0.0


def text_recall(store: MemoryStore, query: str, persona: str, prompts: Prompts, *, k: int = 6,
                exclude: set[int] | None = None, now: float | None = None) -> Recall:
    """Recall up to ``k`` memories for ``query`` and build the system prompt around them.
    ``exclude``: memory ids already recalled another way (token recall passes its own); ``now``:
    the prompt's "today" (default: the clock; a replayed conversation passes its own time)."""
    started = time.perf_counter()
    hits = rank_memories(store, query, persona, k=k + len(exclude or ())) if k > 0 else []
    hits = [h for h in hits if h.memory.id not in (exclude or set())][:k]
    recall = text_recall_prompt(hits, persona, prompts, now=now)
    recall.elapsed_ms = (time.perf_counter() - started) * 1000
    return recall


def text_recall_prompt(hits: list[MemoryHit], persona: str, prompts: Prompts, *, now: float | None = None) -> Recall:
    """The system prompt around recalled memories (both paths put them in the prompt as text)."""
    today = spoken_date(time.time() if now is None else now)
    if hits:
        # Newest first, as the prompt promises: on a contradiction the newer memory wins.
        ordered = sorted(hits, key=lambda h: -h.memory.valid_from)
        lines = "\n".join(prompts.format("recall", "memory", id=h.memory.id, date=spoken_date(h.memory.valid_from),
                                         source=h.memory.source, text=dated_statement(h.memory)) for h in ordered)
        system = prompts.format("recall", "system", today=today, persona=persona, memories=lines)
    else:
        system = prompts.format("recall", "empty", today=today, persona=persona)
    return Recall(PATH, hits, system)
