"""A yes / no / maybe decision on a research question from numbered evidence (PubMedQA's form),
with the label forced by a grammar: issue 13's accuracy measurement with a real model.

The model sees what the drafting step shows it (``evidence.numbered``: ``[Evidence n] text``, then
the question) under a system prompt that asks for one word. On engines that can force their output
(``supports_structured_output``: llama.cpp's grammar, a remote llama.cpp server) ``LABEL_GRAMMAR``
masks every token that would not spell yes, no or maybe, so no answer is lost to parsing and the
reply costs a token or two; elsewhere (transformers) the first of the three words in the reply is
taken, and a reply without one is counted as unanswered (``label`` None), never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localqwen_medical.evidence import Passage, numbered

if TYPE_CHECKING:
    from localqwen.plugin_api import CancelToken

LABELS = ("yes", "no", "maybe")
LABEL_GRAMMAR = 'root ::= "yes" | "no" | "maybe"'
DECIDE_SYSTEM = (
    "You are a careful medical assistant. Answer the research question using ONLY the numbered evidence. "
    "Reply with one word: yes, no or maybe (maybe when the evidence is mixed or does not settle it).")
NO_EVIDENCE = "(none)"
_LABEL_WORD = re.compile(r"\b(yes|no|maybe)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Decision:
    label: str | None  # "yes" | "no" | "maybe", or None when an unconstrained reply named none
    raw: str  # the model's reply as written
    constrained: bool  # whether the grammar forced the reply
    prompt_tokens: int = 0


def decision_messages(question: str, passages: list[Passage]) -> list[dict[str, Any]]:
    """System prompt, then the numbered evidence and the question (the same evidence block the
    draft prompt uses, so the decision reads exactly what a drafted answer would cite)."""
    if not question.strip():
        raise ValueError("a decision needs a question; got an empty one")
    user = f"Evidence:\n{numbered(passages) or NO_EVIDENCE}\n\nQuestion: {question.strip()}\nAnswer (yes, no or maybe):"
    return [{"role": "system", "content": DECIDE_SYSTEM}, {"role": "user", "content": user}]


def parse_label(text: str) -> str | None:
    """The first of yes / no / maybe in ``text`` (lower-cased), None when it names none."""
    found = _LABEL_WORD.search(text or "")
    return found.group(1).lower() if found else None


def decide(engine: Any, question: str, passages: list[Passage], *, cancel: CancelToken | None = None) -> Decision:
    """Ask ``engine`` for the label, greedy; forced by ``LABEL_GRAMMAR`` where the engine can."""
    from localqwen.runtime.engine import GenerationSettings

    constrained = bool(getattr(engine, "supports_structured_output", False))
    settings = GenerationSettings(max_new_tokens=3 if constrained else 16, temperature=0.0, seed=0,
                                  grammar=LABEL_GRAMMAR if constrained else None)
    result = engine.chat(decision_messages(question, passages), settings=settings, cancel=cancel)
    text = result.text.strip()
    label = text if constrained and text in LABELS else parse_label(text)
    return Decision(label, text, constrained, int(getattr(result, "prompt_tokens", 0) or 0))
