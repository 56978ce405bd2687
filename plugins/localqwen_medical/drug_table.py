"""The curated drug table the rule layer checks against (``drug_table.json``).

Curated for tests and demos by this project, NOT clinical advice and not complete: drug names
(English, Chinese, common brands) -> classes, allergy groups and their cross-reactions,
contraindicated pairs, daily maximum doses of common OTC drugs, drugs contraindicated in
pregnancy, in children and with some conditions, and emergency symptom phrases. Every entry
carries a one-line ``why`` that becomes part of the finding's message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

_LATIN = re.compile(r"[A-Za-z]")


def _name_pattern(names: list[str], *, stems: bool = False) -> re.Pattern[str]:
    """One alternation, longest first (so "阿莫西林克拉维酸钾" beats "阿莫西林"); Latin names
    match whole words (plural -s allowed; with ``stems`` any ending, "sweat" -> "sweating"),
    Chinese ones anywhere."""
    parts = []
    ending = r"" if stems else r"(?:s|es)?(?![A-Za-z])"
    for name in sorted(set(names), key=len, reverse=True):
        escaped = re.escape(name)
        parts.append(rf"(?<![A-Za-z]){escaped}{ending}" if _LATIN.search(name) else escaped)
    return re.compile("|".join(parts), re.IGNORECASE)


@dataclass(frozen=True)
class Mention:
    """A drug (or drug class) named in a text."""

    drug: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Conflict:
    """Why a drug may not be given: ``kind`` is allergy / pair / pregnancy / age / condition."""

    kind: str
    drug: str
    other: str  # the allergen, the other drug, "pregnancy", "age 8", the condition
    why: str


@dataclass(frozen=True)
class EmergencyHit:
    id: str
    start: int
    end: int
    text: str
    why: str


class DrugTable:
    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.drugs: dict[str, dict[str, Any]] = data["drugs"]
        self._name_to_drug = {name.lower(): drug for drug, entry in self.drugs.items() for name in entry["names"]}
        self._drug_re = _name_pattern(list(self._name_to_drug))
        self._groups: dict[str, dict[str, Any]] = data["allergy_groups"]
        self._group_names = {name.lower(): group for group, entry in self._groups.items() for name in entry["names"]}
        self._group_re = _name_pattern(list(self._group_names))
        self._drug_groups: dict[str, str] = {k: v for k, v in data["drug_allergy_groups"].items()
                                             if not k.startswith("_")}
        self._pairs = data["contraindicated_pairs"]
        self._conditions = [(_name_pattern(entry["condition"]), entry) for entry in data["condition_contraindicated"]]
        self._emergencies = []
        for entry in data["emergencies"]:
            groups = entry.get("all") or [entry["any"]]
            self._emergencies.append((entry, [_name_pattern(group, stems=True) for group in groups]))
        self._urgent_re = _name_pattern(data["urgent_care_phrases"])
        self._urgent_negation_re = _name_pattern(data["urgent_care_negations"])

    # ------------------------------------------------------------ names
    def find_drugs(self, text: str) -> list[Mention]:
        return [Mention(self._name_to_drug[_singular(match.group(0).lower(), self._name_to_drug)],
                        match.start(), match.end(), match.group(0))
                for match in self._drug_re.finditer(text)]

    def classes(self, drug: str) -> set[str]:
        return set(self.drugs[drug]["classes"])

    def is_prescription_only(self, drug: str) -> bool:
        return bool(self.drugs[drug].get("rx"))

    def _matches(self, key: str, drug: str) -> bool:
        """A table key names a drug id or a class."""
        return key == drug or key in self.classes(drug)

    # ------------------------------------------------------------ conflicts
    def allergy_conflict(self, drug: str, allergies: list[str]) -> Conflict | None:
        """The patient's allergy (free text, zh or en) that rules ``drug`` out, with why."""
        for allergy in allergies:
            groups: dict[str, str] = {}  # group -> why
            for match in self._group_re.finditer(allergy):
                group = self._group_names[_singular(match.group(0).lower(), self._group_names)]
                groups[group] = self._groups[group]["why"]
            for mention in self.find_drugs(allergy):
                if mention.drug == drug:
                    return Conflict("allergy", drug, allergy, f"the patient is allergic to {allergy}")
                group = self._drug_groups.get(mention.drug)
                if group and group not in groups:
                    groups[group] = (f"{mention.text} belongs to the {group} group: "
                                     f"{self._groups[group]['why']}")
            for group, why in groups.items():
                conflicts = set(self._groups[group]["conflicts"])
                hit = conflicts & self.classes(drug)
                if hit:
                    return Conflict("allergy", drug, allergy, why)
        return None

    def pair_conflict(self, drug: str, other: str) -> Conflict | None:
        if drug == other:
            return None
        for pair in self._pairs:
            a, b = pair["a"], pair["b"]
            if (self._matches(a, drug) and self._matches(b, other)) or (
                    self._matches(b, drug) and self._matches(a, other)):
                return Conflict("pair", drug, other, pair["why"])
        return None

    def pregnancy_conflict(self, drug: str) -> Conflict | None:
        for entry in self.data["pregnancy_contraindicated"]:
            if self._matches(entry["drug"], drug):
                return Conflict("pregnancy", drug, "pregnancy", entry["why"])
        return None

    def age_conflict(self, drug: str, age: float) -> Conflict | None:
        for entry in self.data["paediatric_contraindicated"]:
            if self._matches(entry["drug"], drug) and age < entry["under_age"]:
                return Conflict("age", drug, f"age {age:g} (under {entry['under_age']})", entry["why"])
        return None

    def condition_conflict(self, drug: str, conditions: list[str]) -> Conflict | None:
        for condition in conditions:
            for pattern, entry in self._conditions:
                if pattern.search(condition) and self._matches(entry["drug"], drug):
                    return Conflict("condition", drug, condition, entry["why"])
        return None

    def conditions_in(self, text: str) -> list[str]:
        """Condition names from the table found in free text (the question)."""
        return [match.group(0) for pattern, _ in self._conditions for match in pattern.finditer(text)]

    def max_dose(self, drug: str) -> dict[str, Any] | None:
        return self.data["max_daily_dose_mg"].get(drug)

    # ------------------------------------------------------------ emergencies
    def emergencies(self, text: str) -> list[EmergencyHit]:
        """Emergency symptom phrases in ``text`` ("all" entries need one phrase from each group)."""
        hits = []
        for entry, patterns in self._emergencies:
            matches = [pattern.search(text) for pattern in patterns]
            if all(matches):
                first = matches[0]
                hits.append(EmergencyHit(entry["id"], first.start(), first.end(), first.group(0), entry["why"]))
        return hits

    def urgent_advice(self, text: str) -> re.Match[str] | None:
        """The first phrase sending the patient to urgent care that is not itself negated
        ("no need to go to the ER" is not advice)."""
        for match in self._urgent_re.finditer(text):
            before = text[max(0, match.start() - 25):match.start()]
            before = re.split(r"[.!?。！？;；\n,，]", before)[-1]
            if not self._urgent_negation_re.search(before):
                return match
        return None


def _singular(name: str, known: dict[str, str]) -> str:
    if name in known:
        return name
    for suffix in ("es", "s"):
        if name.endswith(suffix) and name[: -len(suffix)] in known:
            return name[: -len(suffix)]
    raise KeyError(name)


@cache
def drug_table() -> DrugTable:
    """The packaged table, read once."""
    text = resources.files("localqwen_medical").joinpath("drug_table.json").read_text(encoding="utf-8")
    return DrugTable(json.loads(text))
