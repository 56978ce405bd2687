"""Keeping memories current: contradictions supersede, duplicates are not re-added, and "forget"
requests from the chat are resolved to a memory.

- A new fact about the same subject and attribute with a different value supersedes the active
  one (the old keeps its history and ``valid_to``). The extractor names subject/attribute; for a
  fact added by hand, :func:`parse_statement` reads the common "my X is Y" shapes.
- An exact duplicate (same normalised words) is caught by the store; a near duplicate (word
  overlap >= 0.8, or cosine >= 0.95 when vectors exist) is not re-added either.
- ``/forget ID`` forgets that memory; "forget that I ..." searches the persona's memories and
  forgets the best match when it is close enough, else asks for an id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from localqwen_memory.store import MemoryHit, MemoryRecord, MemoryStore, MemoryStoreError, normalise

NEAR_DUPLICATE_OVERLAP = 0.8
NEAR_DUPLICATE_COSINE = 0.95
FORGET_MIN_OVERLAP = 0.5

# "my favourite colour is green", "my sister's name is Ann", "I live in Berlin", "I work as a nurse"...
_STATEMENTS = [
    (re.compile(r"^(?:(?:and|also|now|actually|so)\s+)?my\s+(?P<attribute>[\w' ]+?)\s+(?:is|are|was|has become|is now|are now)\s+(?:now\s+)?(?P<value>.+)$", re.I), "user"),
    (re.compile(r"^(?P<subject>[A-Z][\w]+)'s\s+(?P<attribute>[\w' ]+?)\s+(?:is|are|was)\s+(?:now\s+)?(?P<value>.+)$"), None),
    (re.compile(r"^i\s+(?:now\s+|still\s+)?(?:live|lives|living)\s+in\s+(?P<value>.+)$", re.I), "user:home city"),
    (re.compile(r"^i\s+(?:have\s+)?moved\s+to\s+(?P<value>.+)$", re.I), "user:home city"),
    (re.compile(r"^i\s+(?:now\s+)?work\s+(?:as\s+an?|as)\s+(?P<value>.+)$", re.I), "user:job"),
    (re.compile(r"^i\s+(?:now\s+)?work\s+(?:at|for)\s+(?P<value>.+)$", re.I), "user:employer"),
    (re.compile(r"^i\s+am\s+(?P<value>\d+)\s+years?\s+old$", re.I), "user:age"),
    (re.compile(r"^i(?:'m|\s+am)\s+(?:now\s+)?(?:a|an)\s+(?P<value>[\w -]+)$", re.I), "user:job"),
    (re.compile(r"^my\s+name\s+is\s+(?P<value>.+)$", re.I), "user:name"),
    (re.compile(r"^i\s+drive\s+an?\s+(?P<value>.+)$", re.I), "user:car"),
]


@dataclass
class Statement:
    subject: str
    attribute: str
    value: str


def parse_statement(text: str) -> Statement | None:
    """Subject, attribute and value of a simple first-person statement, or None."""
    sentence = text.strip().rstrip(".!").strip()
    sentence = re.sub(r"^the user(?:'s)?\b", lambda m: "my" if m.group().endswith("'s") else "I", sentence, flags=re.I)
    for pattern, fixed in _STATEMENTS:
        match = pattern.match(sentence)
        if match is None:
            continue
        groups = match.groupdict()
        if fixed and ":" in fixed:
            subject, attribute = fixed.split(":", 1)
        else:
            subject = fixed or groups["subject"]
            attribute = groups["attribute"]
        attribute = re.sub(r"\b(favorite)\b", "favourite", attribute.lower()).strip()
        return Statement(subject=subject.lower(), attribute=attribute, value=groups["value"].strip())
    return None


@dataclass
class Decision:
    """What :func:`remember` did: ``added`` a new memory, found a ``duplicate``, or ``superseded``
    older memories (``replaced``) with the new one."""

    action: Literal["added", "duplicate", "superseded", "forgotten-before"]
    memory: MemoryRecord | None
    replaced: list[MemoryRecord]


def remember(store: MemoryStore, text: str, *, persona: str = "default", fact: str | None = None,
             subject: str | None = None, attribute: str | None = None, value: str | None = None,
             source_session: int | None = None, source_message: int | None = None,
             valid_from: float | None = None, respect_tombstones: bool = True) -> Decision:
    """Add a fact the careful way: skip duplicates, supersede what it contradicts."""
    statement_text = fact or text
    if not (subject and attribute):
        parsed = parse_statement(statement_text)
        if parsed is not None:
            subject, attribute, value = parsed.subject, parsed.attribute, value or parsed.value
    duplicate = near_duplicate(store, statement_text, persona)
    if duplicate is not None:
        return Decision("duplicate", duplicate, [])
    contradicted = []
    if subject and attribute and value:
        contradicted = [m for m in store.by_attribute(persona, subject, attribute)
                        if normalise(m.value or "") != normalise(value)]
    try:
        memory, created = store.add(text, persona=persona, fact=fact or text, kind="fact", subject=subject,
                                    attribute=attribute, value=value, source_session=source_session,
                                    source_message=source_message, valid_from=valid_from,
                                    respect_tombstones=respect_tombstones)
    except MemoryStoreError:
        return Decision("forgotten-before", None, [])
    if not created:
        return Decision("duplicate", memory, [])
    for old in contradicted:
        memory = store.supersede(old.id, memory.id)
    return Decision("superseded" if contradicted else "added", memory, contradicted)


def _words(text: str) -> set[str]:
    return set(normalise(text).split())


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' words."""
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def near_duplicate(store: MemoryStore, text: str, persona: str) -> MemoryRecord | None:
    """An active fact saying nearly the same thing, if any."""
    for hit in store.search(text, persona, k=5, kinds=["fact"]):
        if overlap(text, hit.memory.statement) >= NEAR_DUPLICATE_OVERLAP:
            return hit.memory
        if hit.scores.get("dense", 0.0) >= NEAR_DUPLICATE_COSINE:
            return hit.memory
    return None


_FORGET = re.compile(r"^\s*(?:please\s+)?forget\s+(?:that\s+|about\s+|the fact that\s+)?(?P<what>.+?)\s*[.!]?\s*$", re.I)


def forget_request(text: str) -> str | None:
    """The thing to forget in "forget that I ...", "please forget about my dog", else None."""
    match = _FORGET.match(text)
    if match is None:
        return None
    what = match.group("what")
    return what if len(_words(what)) >= 1 else None


@dataclass
class ForgetResult:
    forgotten: MemoryRecord | None
    candidates: list[MemoryHit]
    message: str


def forget_matching(store: MemoryStore, what: str, persona: str) -> ForgetResult:
    """Forget the memory that best matches ``what`` when it is clearly the one meant (its words
    overlap the request enough); otherwise list the candidates and forget nothing."""
    query = re.sub(r"\bI\b", "user", what)
    hits = store.search(what, persona, k=5)
    if not hits:
        return ForgetResult(None, [], f"I have no memory matching \"{what}\".")
    best = hits[0]
    close = max(overlap(what, best.memory.statement), overlap(query, best.memory.statement))
    runner_up = hits[1].score if len(hits) > 1 else 0.0
    if close >= FORGET_MIN_OVERLAP or (best.score > 0 and runner_up < 0.5 * best.score and close >= 0.25):
        statement = best.memory.statement
        store.forget(best.memory.id)
        return ForgetResult(store.get(best.memory.id), hits,
                            f"Forgotten memory #{best.memory.id}: \"{statement}\". It is out of recall and "
                            "will not be consolidated.")
    listing = "; ".join(f"#{h.memory.id} \"{h.memory.statement[:80]}\"" for h in hits[:3])
    return ForgetResult(None, hits, f"I am not sure which memory you mean: {listing}. Use /forget ID.")


def forget_by_id(store: MemoryStore, memory_id: int, persona: str) -> ForgetResult:
    try:
        memory = store.get(memory_id)
    except MemoryStoreError as exc:
        return ForgetResult(None, [], str(exc).capitalize() + ".")
    if memory.persona != persona:
        return ForgetResult(None, [], f"Memory #{memory_id} belongs to persona '{memory.persona}', not '{persona}'.")
    if memory.status == "forgotten":
        return ForgetResult(memory, [], f"Memory #{memory_id} was already forgotten.")
    statement = memory.statement
    return ForgetResult(store.forget(memory_id), [],
                        f"Forgotten memory #{memory_id}: \"{statement}\". It is out of recall and will not be "
                        "consolidated.")
