"""Paraphrase augmentation: facts are only learnt when seen in several wordings.

Each memory gets >= 5 statement wordings and a set of questions from deterministic templates
(subject / verb / object split by a small rule set, questions that vary the frame), plus the
model's own paraphrases when an engine is given. Some question frames are never used for
training: they are the held-out paraphrases the evaluation asks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Verbs we split a fact at (the first match wins); longer phrases first so "lives in" beats "is".
_VERBS = (
    "lives in", "works as", "works at", "works for", "was born in", "grew up in", "is allergic to",
    "is married to", "is afraid of", "studies", "likes", "loves", "hates", "prefers", "owns", "plays",
    "drives", "speaks", "drinks", "eats", "reads", "wants", "needs", "has", "have", "is", "are", "was",
    "were",
)
_VERB_RE = re.compile(r"\s(" + "|".join(re.escape(v) for v in _VERBS) + r")\s", re.IGNORECASE)

MIN_WORDINGS = 5

# {s}, {v}, {o}: subject, verb, object of the fact.
STATEMENT_TEMPLATES = (
    "{s} {v} {o}.",
    "Remember that {s} {v} {o}.",
    "It is {o} that {s} {v}.",
    "{o}: that is what {s} {v}.",
    "Note this: {s} {v} {o}.",
    "Something about {s}: it {v} {o}.",
)
QUESTION_TEMPLATES = (
    "Do you remember what {s} {v}?",
    "Tell me what {s} {v}.",
    "{s} {v} what?",
    "Can you recall what {s} {v}?",
    "What do you know about {s}?",
    "Remind me, what {s} {v}?",
)
# Frames kept out of training: the evaluation's held-out paraphrased questions.
HELD_OUT_QUESTION_TEMPLATES = (
    "I forgot what {s} {v}. Do you know?",
    "Any idea what {s} {v}?",
)
# Facts without a verb we know: wrap the whole text.
FREE_STATEMENTS = ("{t}", "Remember: {t}", "Note that {t_lc}", "You told me that {t_lc}", "Something to keep: {t}")
FREE_QUESTIONS = ("What do you remember about {k}?", "What did I tell you about {k}?", "Do you recall {k}?",
                  "Tell me about {k}.")
FREE_HELD_OUT = ("Anything you know about {k}?",)


@dataclass(frozen=True)
class FactParts:
    subject: str
    verb: str
    object: str


@dataclass
class Augmented:
    """One memory in many wordings: statements and questions for training, held-out questions for
    evaluation only."""

    memory_id: str
    text: str
    statements: list[str]
    questions: list[str]
    held_out_questions: list[str]
    model_paraphrases: list[str] = field(default_factory=list)

    @property
    def training_prompts(self) -> list[str]:
        """Everything that should make the model recall this memory (never the held-out ones)."""
        return _unique(self.statements + self.model_paraphrases + self.questions)


def split_fact(text: str) -> FactParts | None:
    """Subject / verb / object of a simple fact ("Ana's cat is called Miso"), or None."""
    body = text.strip().rstrip(".!")
    match = _VERB_RE.search(body)
    if match is None:
        return None
    subject, obj = body[: match.start()].strip(), body[match.end():].strip()
    if not subject or not obj:
        return None
    return FactParts(subject, match.group(1).lower(), obj)


def _key_phrase(text: str) -> str:
    """What a question about a verbless memory can name: its first words (without the full stop)."""
    words = text.strip().rstrip(".!?").split()
    return " ".join(words[:4]) if words else text


_LEADING_WORDS = {"the", "my", "a", "an", "our", "his", "her", "their", "your", "this", "that", "meeting"}


def _lower_first(text: str) -> str:
    """Lower a leading article-like word for use mid-sentence; names stay as they are."""
    first, _, rest = text.partition(" ")
    return (first.lower() + (" " + rest if rest else "")) if first.lower() in _LEADING_WORDS else text


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append(item.strip())
    return out


def augment(memory_id: str, text: str, *, engine: Any = None, model_paraphrases: int = 3) -> Augmented:
    """All wordings of one memory; with ``engine``, add up to ``model_paraphrases`` of the model's own."""
    if not text or not text.strip():
        raise ValueError(f"memory {memory_id} has no text to paraphrase")
    text = text.strip()
    parts = split_fact(text)
    if parts is not None:
        values = {"s": _lower_first(parts.subject), "v": parts.verb, "o": parts.object}
        statements = [text] + [_upper_first(t.format(**values)) for t in STATEMENT_TEMPLATES]
        questions = [_upper_first(t.format(**values)) for t in QUESTION_TEMPLATES]
        if parts.verb in ("is", "are", "was", "were"):
            questions.append(f"What {parts.verb} {parts.subject}?")
        held_out = [_upper_first(t.format(**values)) for t in HELD_OUT_QUESTION_TEMPLATES]
    else:
        values = {"t": text, "t_lc": _lower_first(text), "k": _key_phrase(text)}
        statements = [t.format(**values) for t in FREE_STATEMENTS]
        questions = [t.format(**values) for t in FREE_QUESTIONS]
        held_out = [t.format(**values) for t in FREE_HELD_OUT]
    extra = model_wordings(engine, text, model_paraphrases) if engine is not None and model_paraphrases else []
    statements = _unique([s.rstrip(".") + "." if s[-1:] not in ".!?" else s for s in statements])
    held_out = [q for q in _unique(held_out) if q.lower() not in {s.lower() for s in statements + questions}]
    return Augmented(memory_id, text, statements, _unique(questions), held_out, extra)


def model_wordings(engine: Any, text: str, count: int) -> list[str]:
    """Ask the model for ``count`` rewordings, one per line; lines that are empty, too long, or
    just the original are dropped (a small model's reply is used only where it helps)."""
    from localqwen.runtime.engine import GenerationSettings

    prompt = (f"Rewrite this fact in {count} different ways, one per line, keeping every name and "
              f"value exactly:\n{text}")
    reply = engine.chat([{"role": "user", "content": prompt}],
                        settings=GenerationSettings(max_new_tokens=48 * count, temperature=0.0))
    lines = [re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", line).strip() for line in reply.text.splitlines()]
    keep = [line for line in lines if line and line.lower() != text.lower() and len(line) <= 3 * len(text) + 20]
    return _unique(keep)[:count]
