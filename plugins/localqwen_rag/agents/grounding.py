"""Grounding: which passage supports each sentence of an answer, checked without a model.

Small models often answer without ``[n]`` citations, cite the wrong passage, copy the numbered
source list into their text, or state the opposite of what they quote. This module reads the
answer the way a careful reader would:

- each sentence is compared with every passage by the share of its content words (stemmed, stop
  words removed) that the passage contains (``support``); a sentence whose best passage covers at
  least ``ATTRIBUTE_MIN`` of it is *attributed* to that passage, one with too few content words to
  judge (``Yes.``, ``Here is what I found:``) is *neutral*, the rest are *unsupported*;
- a ``[n]`` the model wrote stays only when passage n covers the sentence at least ``CITED_MIN``
  (the same bar: with 0.35, the real 1.5B model's citations of unrelated abstracts that shared
  "mortality" and "weight" with its sentence held) and no other passage covers it ``DWARFED_BY``
  times better;
  otherwise it is dropped as not supporting the sentence, which is then attributed afresh;
- quoted spans must occur in some passage, and a sentence that matches a passage sentence closely
  but with the opposite polarity (a negation or an increase/decrease swap) is a contradiction.

The thresholds were measured on 150 SciFact training claims against the top 5 of 450 abstracts
(``bench/bench_rag_real.py --offline``): taking the claim itself as the answer sentence, a bar
of 0.5 attributes 79% of them, to a judged-relevant abstract in 82% of cases (0.4: 91% / 0.77;
0.6: 59% / 0.83). The contradiction check is narrow on purpose: it catches an answer that
restates its source with the polarity flipped, not a paraphrased disagreement (it flags few
SciFact CONTRADICT claims, see the bench).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localqwen.retrieval.search import Hit

ATTRIBUTE_MIN = 0.5  # share of a sentence's content words a passage must hold to be its source
CITED_MIN = 0.5  # the same bar for a passage the model cited itself (0.35 let wrong-paper citations pass)
DWARFED_BY = 2.0  # ... unless another passage supports the sentence this many times better
MIN_CONTENT_WORDS = 3  # fewer content words: too little to judge (neutral)
CONTRADICTION_OVERLAP = 0.6  # how closely a sentence must match a passage sentence to contradict it
SWAP_OVERLAP = 0.8  # ... and, for an increase/decrease swap, how much of the rest must match
MIN_QUOTE_WORDS = 4  # shorter quoted spans are names or terms, not quotes

CITATION = re.compile(r"\[(\d{1,3})\]")
UNSUPPORTED_MARK = "[unsupported]"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_QUOTE = re.compile(r"(?<![\w=])\"([^\"<>]{8,}?)\"(?!\w)|“([^”<>]{8,}?)”")
# The model naming a passage by the prompt's tag (``<untrusted_document id="2">``, "document 2") means [2].
_DOCUMENT_MENTION = re.compile(r"<\s*/?\s*untrusted_document[^>]*?id\s*=\s*\"?(\d{1,3})\"?[^>]*>|"
                               r"<\s*/?\s*untrusted_document[^>]*>", re.IGNORECASE)
_SOURCES_HEADER = re.compile(r"(?i)^\s*[#*_\s]*(sources?|references?|citations?|bibliography|参考|来源)"
                             r"[*_\s]*[:：]?[*_\s]*(?:\[\d{1,3}\][,;\s]*)*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]\s*)?(?:\[\d{1,3}\]|\d{1,3}[.)])\s*\S")
# Explicit negators only: scientific prose says "unrelated", "without", "absence" in sentences that
# negate nothing a reader would (the real model's faithful APOE4 answer was flagged for "unrelated").
_NEGATION = re.compile(r"(?i)\b(not|no|never|none|neither|nor|cannot)\b|n't\b|不|没有|未")
_LEADING_ANSWER_WORD = re.compile(r"(?i)^\s*(yes|no)\b[,.!:;]?\s*")
# Findings' directions, as the BM25 tokenizer stems them: a word from one group where the source has
# one from the other (and not the same group) reverses the finding.
_UP = frozenset({"increas", "higher", "rais", "rise", "improv", "promot", "activ", "enhanc", "more", "gain", "benefit"})
_DOWN = frozenset({"decreas", "lower", "reduc", "declin", "worsen", "inhibit", "suppress", "less", "fewer", "loss",
                   "harm", "impair"})


@lru_cache(maxsize=1)
def _tokenizer():
    from localqwen.retrieval.bm25 import Tokenizer

    return Tokenizer()


def content_words(text: str) -> set[str]:
    """Stemmed words without stop words and without citation numbers."""
    return set(_tokenizer()(CITATION.sub(" ", text)))


def split_sentences(text: str) -> list[str]:
    parts: list[str] = []
    for part in _SENTENCE_END.split(text):
        part = (part or "").strip()
        if not part:
            continue
        leading = re.match(r"(?:\[\d{1,3}\][,\s]*)+[.!?]?", part)
        if parts and leading:  # "It works. [1] Next.": the citation belongs to the sentence before
            parts[-1] += " " + leading.group().strip()
            part = part[leading.end():].strip()
        if part:
            parts.append(part)
    return parts


def support(sentence_words: set[str], passage_words: set[str]) -> float:
    """Share of the sentence's content words the passage holds (0..1)."""
    if not sentence_words:
        return 0.0
    return len(sentence_words & passage_words) / len(sentence_words)


@dataclass
class SentenceGrounding:
    text: str  # the sentence as the model wrote it (its citations included)
    # "cited" (a model citation holds), "attributed", "unsupported", "neutral", or "quoted" (the app
    # opened a rewrite with this sentence of the passage, see responder.best_quote)
    status: str
    sources: list[int] = field(default_factory=list)  # 1-based passage numbers that support it
    score: float = 0.0  # support by its best passage
    rejected_citations: list[int] = field(default_factory=list)  # the model cited them; they don't support it


@dataclass
class Grounding:
    sentences: list[SentenceGrounding]
    quote_problems: list[str] = field(default_factory=list)
    contradictions: list[str] = field(default_factory=list)

    @property
    def cited(self) -> list[int]:
        """Passages that support some sentence, by the model's citation or by attribution."""
        return sorted({n for s in self.sentences for n in s.sources})

    @property
    def own_grounded(self) -> bool:
        """Whether the answer's own sentences (all but the app's opening quote) rest on the passages:
        one of them is cited or attributed, or all are too short to judge ("Yes."); an answer with
        nothing besides the quote is not."""
        own = [s for s in self.sentences if s.status != "quoted"]
        return bool(own) and (any(s.status in ("cited", "attributed") for s in own)
                              or all(s.status == "neutral" for s in own))

    @property
    def model_cited(self) -> list[int]:
        return sorted({n for s in self.sentences if s.status == "cited" for n in s.sources})

    @property
    def unsupported(self) -> list[str]:
        return [s.text for s in self.sentences if s.status == "unsupported"]

    @property
    def judged(self) -> int:
        return sum(s.status != "neutral" for s in self.sentences)

    def annotated(self) -> str:
        """The answer with each attributed sentence given its ``[n]`` and each unsupported one marked."""
        parts = []
        for sentence in self.sentences:
            text = sentence.text
            if sentence.rejected_citations:
                text = _without_citations(text, set(sentence.rejected_citations))
                text = re.sub(r" {2,}", " ", re.sub(r"\s+([.,;:!?])", r"\1", text)).strip()
            if sentence.status == "attributed":
                text = _append_marker(text, "".join(f"[{n}]" for n in sentence.sources))
            elif sentence.status == "unsupported":
                text = _append_marker(text, UNSUPPORTED_MARK)
            parts.append(text)
        return _rejoin(parts)


def _without_citations(text: str, drop: set[int]) -> str:
    def keep(match: re.Match[str]) -> str:
        return "" if int(match.group(1)) in drop else match.group(0)

    return CITATION.sub(keep, text)


def _append_marker(sentence: str, marker: str) -> str:
    """Put the marker before the sentence's closing punctuation: ``It works [1].``"""
    match = re.search(r"[.!?。！？]+$", sentence)
    if match:
        return f"{sentence[:match.start()].rstrip()} {marker}{match.group()}"
    return f"{sentence} {marker}"


def _rejoin(sentences: list[str]) -> str:
    # List items and headings were split on newlines; keep them on their own lines.
    out = ""
    for sentence in sentences:
        if not out:
            out = sentence
        elif re.match(r"^\s*(?:[-*•#]|\d{1,3}[.)])\s", sentence) or out.endswith(":"):
            out += "\n" + sentence
        else:
            out += " " + sentence
    return out


def normalise_mentions(body: str) -> str:
    """``<untrusted_document id="2">`` written into an answer becomes ``[2]`` (a bare tag disappears)."""
    return _DOCUMENT_MENTION.sub(lambda m: f"[{m.group(1)}]" if m.group(1) else "", body)


def strip_copied_sources(body: str) -> str:
    """Cut a sources / references list the model wrote at the end of its answer.

    The app appends the real list itself; a copied one must neither show twice nor count as
    citations. Only a trailing block is cut: a header line ("Sources:") and/or ``[n] ...`` items."""
    lines = body.rstrip().splitlines()
    cut = len(lines)
    index = len(lines) - 1
    while index >= 0:
        line = lines[index]
        if not line.strip() or _LIST_ITEM.match(line):
            index -= 1
            continue
        if _SOURCES_HEADER.match(line):
            cut = index
        break
    if cut == len(lines):  # no header: trailing "[n] file.md, Heading" lines are a copied list too
        index = len(lines)
        while index > 0 and (not lines[index - 1].strip() or _looks_like_source_line(lines[index - 1])):
            index -= 1
        if any(line.strip() for line in lines[index:]):
            cut = index
    return "\n".join(lines[:cut]).rstrip()


def _looks_like_source_line(line: str) -> bool:
    """``[2] statins.md, Statins > Side effects``: a bracketed number then a file-ish name, no sentence."""
    match = re.match(r"^\s*\[\d{1,3}\]\s+(.*)$", line)
    if not match:
        return False
    rest = match.group(1)
    return bool(re.search(r"\.\w{1,5}\b|, p\. \d+", rest)) and len(rest.split()) <= 14


def ground(body: str, passages: list[Hit] | list[str]) -> Grounding:
    """Attribute every sentence of ``body`` to the passages (1-based numbers, as cited)."""
    texts = [p if isinstance(p, str) else f"{p.heading}\n{p.text}" for p in passages]
    passage_words = [content_words(text) for text in texts]
    sentences = []
    for sentence in split_sentences(body):
        words = content_words(_LEADING_ANSWER_WORD.sub("", sentence))
        written = [int(n) for n in CITATION.findall(sentence)]
        valid = [n for n in dict.fromkeys(written) if 1 <= n <= len(texts)]
        if len(words) < MIN_CONTENT_WORDS or not texts:
            sentences.append(SentenceGrounding(sentence, "neutral", valid))
            continue
        scores = [support(words, pw) for pw in passage_words]
        best = max(range(len(scores)), key=lambda i: scores[i])
        # A cited passage must hold part of the sentence, and not be dwarfed by another that holds it all.
        dwarfed = scores[best] >= ATTRIBUTE_MIN and scores[best] >= DWARFED_BY * max(scores[n - 1] for n in valid) \
            if valid else False
        held = [n for n in valid if scores[n - 1] >= CITED_MIN and not (dwarfed and n != best + 1)]
        rejected = [n for n in valid if n not in held]
        if held:
            sentences.append(SentenceGrounding(sentence, "cited", held, max(scores[n - 1] for n in held), rejected))
        elif scores[best] >= ATTRIBUTE_MIN:
            sentences.append(SentenceGrounding(sentence, "attributed", [best + 1], scores[best], rejected))
        else:
            sentences.append(SentenceGrounding(sentence, "unsupported", [], scores[best], rejected))
    grounding = Grounding(sentences)
    grounding.quote_problems = check_quotes(body, texts)
    grounding.contradictions = find_contradictions(grounding, texts)
    return grounding


def _normalised(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def check_quotes(body: str, passages: list[str]) -> list[str]:
    """Quoted spans (4+ words) that occur in none of the passages."""
    haystacks = [_normalised(p) for p in passages]
    problems = []
    for match in _QUOTE.finditer(body):
        quote = match.group(1) or match.group(2)
        if len(quote.split()) < MIN_QUOTE_WORDS:
            continue
        needle = _normalised(CITATION.sub(" ", quote))
        if needle and not any(needle in haystack for haystack in haystacks):
            problems.append(f'the quote "{quote[:80]}" is not in the sources')
    return problems


def _polarity(text: str) -> bool:
    """True when the sentence is negated an odd number of times."""
    return len(_NEGATION.findall(_LEADING_ANSWER_WORD.sub("", text))) % 2 == 1


def _direction(words: set[str]) -> str:
    up, down = bool(words & _UP), bool(words & _DOWN)
    return "up" if up and not down else "down" if down and not up else ""


def find_contradictions(grounding: Grounding, passages: list[str]) -> list[str]:
    """Sentences that say the opposite of the passage sentence they match best.

    For each judged sentence with a source (and for quoted spans, which claim a source's words),
    the closest sentence of its supporting passages is found; when they share most content words
    but differ in negation, or one says "increase" where the other says "decrease", it is reported."""
    found = []
    passage_sentences = [[(s, content_words(s)) for s in split_sentences(p)] for p in passages]
    for sentence in grounding.sentences:
        if sentence.status not in ("cited", "attributed"):
            continue
        claim = _QUOTE.sub(" ", sentence.text)  # the quote is checked against the passage by check_quotes
        words = content_words(_LEADING_ANSWER_WORD.sub("", claim))
        if len(words) < MIN_CONTENT_WORDS:
            continue
        for number in sentence.sources:
            candidates = passage_sentences[number - 1]
            if not candidates:
                continue
            best_text, best_words = max(candidates, key=lambda c: support(words, c[1]))
            if support(words, best_words) < CONTRADICTION_OVERLAP:
                continue
            flipped = _polarity(claim) != _polarity(best_text)
            mine, theirs = _direction(words - best_words), _direction(best_words - words)
            # A direction swap counts only when the rest is nearly the same sentence: "reduce
            # resistance" and "increase susceptibility" say the same thing in other words.
            rest = support(words - _UP - _DOWN, best_words)
            swapped = bool(mine and theirs and mine != theirs) and rest >= SWAP_OVERLAP
            if flipped or swapped:
                how = "negates" if flipped else "reverses the direction of"
                found.append(f"\"{_short(sentence.text)}\" {how} its source [{number}]: \"{_short(best_text)}\"")
                break
    return found


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
