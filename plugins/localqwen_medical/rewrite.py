"""Turn a colloquial question into a search query with medical terms (拉肚子 -> 腹泻, "tummy ache"
-> abdominal pain), in the question's own language.

A model, when given, rewrites first; its reply is checked (not empty, not an essay, no markup) and
the term list runs over it as well. Without a model, or when its reply fails the check, the term
list (terms.py) alone rewrites. Special-population words (pregnant, 孕妇, child, 老人...) decide
what is safe, so every one in the question is kept: put back if a rewrite dropped it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from localqwen_medical import terms

REWRITE_SYSTEM = (
    "Rewrite the user's health question as one short search query using standard medical terms, in "
    "the same language as the question. Keep every word about pregnancy, breastfeeding, children, "
    "infants or the elderly, and every drug name and number. Reply with the query only.")

_ZH_TERMS = sorted(terms.COLLOQUIAL_ZH.items(), key=lambda item: -len(item[0]))
_EN_TERMS = [(re.compile(rf"\b{re.escape(phrase)}\b", re.I), term)
             for phrase, term in sorted(terms.COLLOQUIAL_EN.items(), key=lambda item: -len(item[0]))
             if phrase != term]
_EN_POPULATION = [(word, re.compile(rf"\b{re.escape(word)}\b", re.I)) for word in terms.SPECIAL_POPULATION_EN]


@dataclass
class Rewrite:
    original: str
    query: str
    source: str  # "terms", "model" (its reply, with the term list run over it), or "unchanged"
    replaced: list[tuple[str, str]] = field(default_factory=list)  # (colloquial, medical) pairs the list applied
    population: list[str] = field(default_factory=list)  # special-population words in the question
    note: str = ""  # why a model's reply was not used

    def to_dict(self) -> dict[str, Any]:
        return {"original": self.original, "query": self.query, "source": self.source,
                "replaced": [list(pair) for pair in self.replaced], "population": list(self.population),
                "note": self.note}


def population_words(text: str) -> list[str]:
    """The special-population words in ``text`` (zh substrings, en whole words), longest first."""
    found = [word for word in sorted(terms.SPECIAL_POPULATION_ZH, key=len, reverse=True) if word in text]
    found = [w for w in found if not any(w != other and w in other for other in found)]  # 孕 inside 孕妇
    found += [word for word, pattern in _EN_POPULATION if pattern.search(text)]
    return found


def apply_terms(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The term list over ``text``: each colloquial phrase replaced by its medical term."""
    replaced: list[tuple[str, str]] = []
    for phrase, term in _ZH_TERMS:
        if phrase in text and phrase != term and term not in text:
            text = text.replace(phrase, term)
            replaced.append((phrase, term))
    for pattern, term in _EN_TERMS:
        match = pattern.search(text)
        if match and term.lower() not in text.lower():
            text = pattern.sub(term, text)
            replaced.append((match.group(0), term))
    return text, replaced


def _keep_population(query: str, words: list[str]) -> str:
    lowered = query.lower()
    missing = [word for word in words if word.lower() not in lowered]
    return f"{query} {' '.join(missing)}".strip() if missing else query


def rewrite_by_terms(text: str) -> Rewrite:
    question = text.strip()
    query, replaced = apply_terms(question)
    words = population_words(question)
    query = _keep_population(query, words)
    return Rewrite(question, query, "terms" if replaced else "unchanged", replaced, words)


def check_model_query(reply: str, question: str) -> str | None:
    """The model's query, cleaned, or None when it is not one (empty, markup, far longer than the question)."""
    text = re.sub(r"<think>.*?(?:</think>|$)", "", reply or "", flags=re.S).strip()
    text = text.strip("`\"'“”「」 \n").splitlines()[0].strip() if text.strip() else ""
    text = re.sub(r"^(?:query|search query|查询|检索词)\s*[:：]\s*", "", text, flags=re.I)
    if not text or "<" in text or "{" in text:
        return None
    if len(text) > 3 * len(question) + 40:
        return None
    return text


def rewrite(text: str, llm: Any = None, *, max_new_tokens: int = 64) -> Rewrite:
    """The search query for ``text``; ``llm`` (anything with ``complete(system, user, max_new_tokens=)``)
    is asked first when given."""
    fallback = rewrite_by_terms(text)
    if llm is None or not text.strip():
        return fallback
    try:
        reply = llm.complete(REWRITE_SYSTEM, text.strip(), max_new_tokens=max_new_tokens)
    except Exception as exc:  # the term list still rewrites; the note says why the model did not
        fallback.note = f"rewrite model failed: {type(exc).__name__}"
        return fallback
    query = check_model_query(reply, text.strip())
    if query is None:
        fallback.note = "the model's reply was not a usable query"
        return fallback
    query, replaced = apply_terms(query)
    return Rewrite(text.strip(), _keep_population(query, fallback.population), "model", replaced,
                   fallback.population)
