"""Citations and quantities in an answer: parse ``[Evidence n]`` markers (English and Chinese,
several ids in one marker), drop citations to evidence that does not exist, and find the
numbers and doses that no evidence passage contains.

Used by the auditor (``unsupported_citation``, ``unsupported_claim``) and by the chat's
grounding validator, so both judge a draft the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# [Evidence 1] [evidence 1, 3] [Evidence 1-3] [证据1] [证据 2、3] 【证据1】; "Source"/"来源" are not
# citations: the prompt asks for this one form and anything else is prose.
_IDS = r"\d+(?:\s*(?:[,，、;；]|-|–|~|and|和|及)\s*\d+)*"
CITATION_RE = re.compile(
    r"[\[【]\s*(?:Evidence|evidence|EVIDENCE|证据)\s*(?:#|No\.?\s*)?(?P<ids>" + _IDS + r")\s*[\]】]")
_ID_SPLIT = re.compile(r"\s*(?:[,，、;；]|and|和|及)\s*")
_RANGE = re.compile(r"^(\d+)\s*(?:-|–|~)\s*(\d+)$")


@dataclass(frozen=True)
class Citation:
    start: int
    end: int
    text: str  # the marker as written, e.g. "[Evidence 1, 3]"
    ids: tuple[int, ...]


def _expand_ids(raw: str) -> tuple[int, ...]:
    ids: list[int] = []
    for part in _ID_SPLIT.split(raw.strip()):
        match = _RANGE.match(part)
        if match:
            low, high = int(match.group(1)), int(match.group(2))
            # A reversed or huge range is a typo, not 500 citations.
            ids.extend(range(low, high + 1) if low <= high <= low + 20 else (low, high))
        elif part.strip():
            ids.extend(int(number) for number in re.findall(r"\d+", part))
    return tuple(dict.fromkeys(ids))


def parse_citations(text: str) -> list[Citation]:
    return [Citation(match.start(), match.end(), match.group(0), _expand_ids(match.group("ids")))
            for match in CITATION_RE.finditer(text)]


def cited_ids(text: str) -> set[int]:
    return {ident for citation in parse_citations(text) for ident in citation.ids}


@dataclass(frozen=True)
class CleanedCitations:
    text: str
    removed: list[Citation]  # markers that cited at least one missing id (as they were written)
    removed_ids: list[int]  # the missing ids, in order of appearance


def _marker(ids: list[int], original: str) -> str:
    chinese = "证据" in original
    if chinese:
        return f"[证据{', '.join(str(i) for i in ids)}]"
    return f"[Evidence {', '.join(str(i) for i in ids)}]"


def drop_invalid_citations(text: str, valid_ids: set[int] | list[int]) -> CleanedCitations:
    """Remove citations to ids not in ``valid_ids``; a marker citing valid and invalid ids keeps
    the valid ones. A removed marker takes the space before it along, so no "word ." is left."""
    valid = set(valid_ids)
    pieces: list[str] = []
    removed: list[Citation] = []
    removed_ids: list[int] = []
    position = 0
    for citation in parse_citations(text):
        bad = [ident for ident in citation.ids if ident not in valid]
        if not bad:
            continue
        removed.append(citation)
        removed_ids.extend(bad)
        good = [ident for ident in citation.ids if ident in valid]
        before = text[position:citation.start]
        if good:
            pieces.append(before + _marker(good, citation.text))
        else:
            pieces.append(before.rstrip(" \t") if before.endswith((" ", "\t")) else before)
        position = citation.end
    pieces.append(text[position:])
    return CleanedCitations(text="".join(pieces), removed=removed, removed_ids=removed_ids)


# ---------------------------------------------------------------- quantities
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9, "十": 10}
_EN_NUMBERS = {"once": 1, "twice": 2, "thrice": 3, "one": 1, "two": 2, "three": 3, "four": 4,
               "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}

# Unit spelling -> (canonical unit, factor to it). Mass goes to mg and volume to ml so that
# "0.5 g" in the evidence supports "500 mg" in the draft.
_UNITS: dict[str, tuple[str, float]] = {
    "mg": ("mg", 1), "milligrams": ("mg", 1), "milligram": ("mg", 1), "毫克": ("mg", 1),
    "g": ("mg", 1000), "grams": ("mg", 1000), "gram": ("mg", 1000), "克": ("mg", 1000),
    "mcg": ("mg", 0.001), "µg": ("mg", 0.001), "μg": ("mg", 0.001), "ug": ("mg", 0.001),
    "micrograms": ("mg", 0.001), "微克": ("mg", 0.001),
    "ml": ("ml", 1), "mL": ("ml", 1), "milliliters": ("ml", 1), "millilitres": ("ml", 1), "毫升": ("ml", 1),
    "L": ("ml", 1000), "升": ("ml", 1000),
    "IU": ("IU", 1), "units": ("IU", 1), "国际单位": ("IU", 1),
    "%": ("%", 1), "percent": ("%", 1),
    "mmHg": ("mmHg", 1), "mmol/L": ("mmol/L", 1), "mg/dL": ("mg/dL", 1), "mg/kg": ("mg/kg", 1),
    "hours": ("h", 1), "hour": ("h", 1), "hrs": ("h", 1), "h": ("h", 1), "小时": ("h", 1),
    "tablets": ("tablet", 1), "tablet": ("tablet", 1), "pills": ("tablet", 1), "capsules": ("tablet", 1),
    "片": ("tablet", 1), "粒": ("tablet", 1),
}
# Longest spellings first so "mg/kg" wins over "mg" and "mL" over "m".
_UNIT_ALT = "|".join(re.escape(unit) for unit in sorted(_UNITS, key=len, reverse=True))
_NUMBER = r"\d+(?:\.\d+)?"
# 200 mg, 200-400 mg, 200 to 400 mg, 0.5g, 30%, 每次2片 ...; a Latin unit must end at a word edge.
_QUANTITY_RE = re.compile(
    rf"(?P<low>{_NUMBER})(?:\s*(?:-|–|~|to|至|到)\s*(?P<high>{_NUMBER}))?\s*(?P<unit>{_UNIT_ALT})(?![A-Za-z])")
_PER_DAY_EN = re.compile(
    r"(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+times\s+(?:a|per|each)\s+day"
    r"|(?P<n2>\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+times\s+daily"
    r"|(?P<word>once|twice|thrice)\s+(?:a|per|each)\s+day|(?P<word2>once|twice|thrice)\s+daily",
    re.IGNORECASE)
_PER_DAY_ZH = re.compile(r"(?:每日|每天|一日|一天|日)\s*(?P<n>\d+|[一二两三四五六七八九十])\s*次")


@dataclass(frozen=True)
class Quantity:
    start: int
    end: int
    text: str  # as written in the text
    value: float  # in the canonical unit
    unit: str  # canonical: mg, ml, IU, %, mmHg, h, tablet, /day, ...


def _number(token: str) -> float:
    token = token.strip()
    if token.lower() in _EN_NUMBERS:
        return float(_EN_NUMBERS[token.lower()])
    if token in _ZH_DIGITS:
        return float(_ZH_DIGITS[token])
    return float(token)


def find_quantities(text: str) -> list[Quantity]:
    """Every number-with-a-unit and every "n times a day" in ``text``, ranges split into their ends."""
    # Citation markers hold numbers that are ids, not quantities.
    masked = CITATION_RE.sub(lambda match: " " * len(match.group(0)), text)
    found: list[Quantity] = []
    for match in _QUANTITY_RE.finditer(masked):
        unit, factor = _UNITS[match.group("unit")]
        span = text[match.start():match.end()]
        for key in ("low", "high"):
            if match.group(key) is not None:
                found.append(Quantity(match.start(), match.end(), span, float(match.group(key)) * factor, unit))
    for pattern in (_PER_DAY_EN, _PER_DAY_ZH):
        for match in pattern.finditer(masked):
            token = next(group for group in match.groups() if group)
            found.append(Quantity(match.start(), match.end(), text[match.start():match.end()],
                                  _number(token), "/day"))
    return sorted(found, key=lambda quantity: quantity.start)


def _same(a: Quantity, b: Quantity) -> bool:
    return a.unit == b.unit and abs(a.value - b.value) <= 1e-6 * max(1.0, abs(a.value))


def unsupported_quantities(text: str, evidence_texts: list[str]) -> list[Quantity]:
    """The quantities in ``text`` that appear in none of ``evidence_texts`` (by value and unit,
    so "0.5 g" supports "500 mg"). A range in the draft is unsupported if either end is."""
    supported = [quantity for evidence in evidence_texts for quantity in find_quantities(evidence)]
    missing: dict[tuple[int, int], Quantity] = {}
    for quantity in find_quantities(text):
        if not any(_same(quantity, other) for other in supported):
            missing.setdefault((quantity.start, quantity.end), quantity)
    return list(missing.values())
