"""Drafting an answer from numbered evidence, and checking its citations.

With a model the draft is written under a prompt that forces an ``[Evidence n]`` citation on every
statement. Without one (rules-only sessions, the grounding benchmark) the draft is extractive:
the evidence sentences that share the most words with the question, each with its citation, taken
only from passages nearly as relevant as the best one. Either way the validator then removes
citations to evidence that does not exist and lists the numbers and doses no passage contains
(med-audit's citations.py, so the chat and the auditor judge a draft alike). With no relevant
evidence the answer says so first and cites nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from localqwen.i18n import catalog
from localqwen_medical.citations import cited_ids, drop_invalid_citations, unsupported_quantities
from localqwen_medical.evidence import Passage, content_terms, coverage, numbered

_CJK = re.compile(r"[\u4e00-\u9fff]")
EXTRACT_SENTENCES = 2  # sentences an extractive draft takes
CITE_RATIO = 0.9  # a passage is cited only when its relevance is this close to the best one's

DRAFT_SYSTEM = (
    "You are a careful medical assistant. Answer the question using ONLY the numbered evidence. "
    "After every sentence that states a fact, cite its source as [Evidence n] with the passage number. "
    "Never cite a number that is not listed, never give a dose or number the evidence does not contain, "
    "do not state a diagnosis as certain, and advise urgent care for emergency symptoms. If the evidence "
    "does not answer the question, say so first. Answer in the language of the question, briefly.")

REFINE_SYSTEM = (
    "You are a careful medical assistant revising a draft answer that a safety auditor rejected. "
    "Rewrite it to fix every listed problem: remove drugs the patient must not take, doses or numbers "
    "no evidence supports, citations to missing evidence and overconfident diagnoses; add advice to get "
    "urgent care where the symptoms need it. Keep [Evidence n] citations for statements from the "
    "evidence. Reply with the revised answer only, in the language of the question.")


def language_of(text: str) -> str:
    """``zh`` when the text is mostly Chinese, else ``en`` (the answer's fixed lines follow it)."""
    cjk = len(_CJK.findall(text))
    latin = len(re.findall(r"[A-Za-z]+", text))
    return "zh" if cjk and cjk >= latin else "en"


def line(key: str, language: str) -> str:
    """A localised fixed line of the medical answer (localqwen/locales, section ``medical``)."""
    return catalog(language).get(f"medical.{key}") or catalog("en").get(f"medical.{key}", key)


def insufficient_answer(language: str) -> str:
    return f"{line('insufficient', language)} {line('insufficient_advice', language)}"


def split_sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?。！？])\s+|(?<=[。！？])", text.strip())
    return [p.strip() for p in parts if len(p.strip()) > 3]


def extractive_draft(question: str, passages: list[Passage], *, language: str | None = None,
                     sentences: int = EXTRACT_SENTENCES) -> str:
    """The evidence sentences closest to the question, each cited (no model involved)."""
    language = language or language_of(question)
    if not passages:
        return insufficient_answer(language)
    best = max(p.relevance for p in passages)
    eligible = [p for p in passages if p.relevance >= CITE_RATIO * best]
    terms = content_terms(question)
    scored = []
    for passage in eligible:
        for order, sentence in enumerate(split_sentences(passage.text)):
            scored.append((coverage(terms, sentence), passage.relevance, -order, sentence, passage.id))
    scored.sort(key=lambda row: (-row[0], -row[1], -row[2]))
    picked = scored[:sentences] or [(0, 0, 0, eligible[0].text.strip(), eligible[0].id)]
    body = " ".join(_cited(sentence, ident) for *_, sentence, ident in picked)
    return f"{line('from_evidence', language)} {body}"


def _cited(sentence: str, ident: int) -> str:
    """The sentence with its citation before the closing stop, so the two stay one sentence."""
    stop = sentence[-1] if sentence[-1] in ".!?。！？" else ("。" if _CJK.search(sentence) else ".")
    return f"{sentence.rstrip('.!?。！？ ')} [Evidence {ident}]{stop}"


def draft_messages(question: str, passages: list[Passage], *, patient_summary: str = "",
                   history: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    user = f"Evidence:\n{numbered(passages) or '(none)'}\n\n"
    if patient_summary:
        user += f"Patient: {patient_summary}\n\n"
    user += f"Question: {question}"
    return [{"role": "system", "content": DRAFT_SYSTEM}, *(history or []), {"role": "user", "content": user}]


def model_draft(llm: Any, question: str, passages: list[Passage], *, patient_summary: str = "",
                history: list[dict[str, Any]] | None = None) -> str:
    result = llm.chat(draft_messages(question, passages, patient_summary=patient_summary, history=history))
    return strip_thinking(result.text)


def refine_messages(question: str, draft: str, critique: str, passages: list[Passage], *,
                    patient_summary: str = "") -> list[dict[str, Any]]:
    user = (f"Evidence:\n{numbered(passages) or '(none)'}\n\n"
            + (f"Patient: {patient_summary}\n\n" if patient_summary else "")
            + f"Question: {question}\n\nDraft:\n{draft}\n\nProblems found:\n{critique}")
    return [{"role": "system", "content": REFINE_SYSTEM}, {"role": "user", "content": user}]


def strip_thinking(text: str) -> str:
    return re.sub(r"<think>.*?(?:</think>|$)", "", text or "", flags=re.S).strip()


def remove_spans(draft: str, spans: list[str]) -> str:
    """The draft without the sentences holding any of ``spans``: the deterministic refine when no
    model is at hand (what cannot be said safely is left out, not reworded)."""
    wanted = [s for s in spans if s.strip()]
    kept = [s for s in split_sentences(draft) if not any(span in s for span in wanted)]
    return " ".join(kept)


@dataclass
class Validation:
    text: str  # the draft with citations to missing evidence removed
    removed_ids: list[int] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # numbers/doses in no evidence, as written
    cited: list[int] = field(default_factory=list)  # valid evidence ids the text cites

    def to_dict(self) -> dict[str, Any]:
        return {"removed_ids": self.removed_ids, "unsupported": self.unsupported, "cited": self.cited}


def validate(draft: str, passages: list[Passage]) -> Validation:
    valid = {p.id for p in passages}
    cleaned = drop_invalid_citations(draft, valid)
    missing = unsupported_quantities(cleaned.text, [p.text for p in passages])
    return Validation(cleaned.text, list(cleaned.removed_ids), list(dict.fromkeys(q.text for q in missing)),
                      sorted(cited_ids(cleaned.text) & valid))
