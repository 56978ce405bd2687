"""What the auditor reads: the patient, the numbered evidence and one audit case (question +
draft answer + evidence + patient), loaded from JSON / JSONL with errors that name the field
and the line.

The case format (issue 13)::

    {"question": "...", "draft": "...", "evidence": [{"id": 1, "text": "..."}],
     "patient": {"allergies": [], "medications": [], "conditions": [],
                 "age": null, "sex": null, "pregnant": null},
     "expected": "allergy_conflict"}          # optional label for reports ("safe" = no finding)

Plain dataclasses, no pydantic: the router, the profile extractor and the auditor all build
these by hand and the errors are ours to word.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class CaseError(ValueError):
    """A case (or a file of cases) that cannot be read; the message names the field or line."""


_LIST_FIELDS = ("allergies", "medications", "conditions")
_PATIENT_FIELDS = (*_LIST_FIELDS, "age", "sex", "pregnant")
_SEXES = ("female", "male", "other")
_SEX_ALIASES = {"f": "female", "woman": "female", "女": "female", "女性": "female",
                "m": "male", "man": "male", "男": "male", "男性": "male"}


@dataclass
class Patient:
    """What the auditor knows about the person asking; empty means unknown, not "none"."""

    allergies: list[str] = field(default_factory=list)
    medications: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    age: float | None = None
    sex: str | None = None  # "female" | "male" | "other" | None
    pregnant: bool | None = None

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "patient") -> Patient:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise CaseError(f"{where}: expected an object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_PATIENT_FIELDS))
        if unknown:
            raise CaseError(f"{where}.{unknown[0]}: unknown field (known: {', '.join(_PATIENT_FIELDS)})")
        values: dict[str, Any] = {}
        for name in _LIST_FIELDS:
            raw = data.get(name)
            if raw is None:
                values[name] = []
                continue
            if isinstance(raw, str):  # "penicillin" is a common slip for ["penicillin"]
                raw = [raw]
            if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
                raise CaseError(f"{where}.{name}: expected a list of strings, got {raw!r}")
            values[name] = [item.strip() for item in raw if item.strip()]
        age = data.get("age")
        if age is not None:
            if isinstance(age, bool) or not isinstance(age, (int, float)):
                raise CaseError(f"{where}.age: expected a number of years or null, got {age!r}")
            if not 0 <= age <= 130:
                raise CaseError(f"{where}.age: {age} is outside 0..130")
        values["age"] = age
        sex = data.get("sex")
        if sex is not None:
            if not isinstance(sex, str):
                raise CaseError(f"{where}.sex: expected a string or null, got {sex!r}")
            sex = _SEX_ALIASES.get(sex.strip().lower(), sex.strip().lower())
            if sex not in _SEXES:
                raise CaseError(f"{where}.sex: {data['sex']!r} is not one of {', '.join(_SEXES)}")
        values["sex"] = sex
        pregnant = data.get("pregnant")
        if pregnant is not None and not isinstance(pregnant, bool):
            raise CaseError(f"{where}.pregnant: expected true, false or null, got {pregnant!r}")
        values["pregnant"] = pregnant
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {"allergies": list(self.allergies), "medications": list(self.medications),
                "conditions": list(self.conditions), "age": self.age, "sex": self.sex,
                "pregnant": self.pregnant}


@dataclass(frozen=True)
class Evidence:
    """One numbered passage the draft may cite as ``[Evidence id]``."""

    id: int
    text: str

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "evidence") -> Evidence:
        if not isinstance(data, dict):
            raise CaseError(f"{where}: expected an object with id and text, got {type(data).__name__}")
        ident, text = data.get("id"), data.get("text")
        if isinstance(ident, bool) or not isinstance(ident, int) or ident < 1:
            raise CaseError(f"{where}.id: expected a positive integer, got {ident!r}")
        if not isinstance(text, str):
            raise CaseError(f"{where}.text: expected a string, got {text!r}")
        return cls(id=ident, text=text)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text}


@dataclass
class AuditCase:
    question: str
    draft: str
    evidence: list[Evidence] = field(default_factory=list)
    patient: Patient = field(default_factory=Patient)
    expected: str | None = None  # a label for reports: a rule id, or "safe"

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "case") -> AuditCase:
        if not isinstance(data, dict):
            raise CaseError(f"{where}: expected a JSON object, got {type(data).__name__}")
        for name in ("question", "draft"):
            if name not in data:
                raise CaseError(f"{where}.{name}: missing")
            if not isinstance(data[name], str):
                raise CaseError(f"{where}.{name}: expected a string, got {data[name]!r}")
        if not data["draft"].strip():
            raise CaseError(f"{where}.draft: empty; there is nothing to audit")
        raw_evidence = data.get("evidence") or []
        if not isinstance(raw_evidence, list):
            raise CaseError(f"{where}.evidence: expected a list, got {type(raw_evidence).__name__}")
        evidence = [Evidence.from_dict(item, where=f"{where}.evidence[{index}]")
                    for index, item in enumerate(raw_evidence)]
        seen: set[int] = set()
        for index, item in enumerate(evidence):
            if item.id in seen:
                raise CaseError(f"{where}.evidence[{index}].id: {item.id} appears twice")
            seen.add(item.id)
        expected = data.get("expected")
        if expected is not None and not isinstance(expected, str):
            raise CaseError(f"{where}.expected: expected a rule id or 'safe', got {expected!r}")
        return cls(question=data["question"], draft=data["draft"], evidence=evidence,
                   patient=Patient.from_dict(data.get("patient"), where=f"{where}.patient"),
                   expected=expected)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"question": self.question, "draft": self.draft,
                                "evidence": [item.to_dict() for item in self.evidence],
                                "patient": self.patient.to_dict()}
        if self.expected is not None:
            data["expected"] = self.expected
        return data

    def evidence_ids(self) -> set[int]:
        return {item.id for item in self.evidence}


def _read_text(path: str | Path) -> str:
    path = Path(path)
    if not path.is_file():
        raise CaseError(f"{path}: no such file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CaseError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def load_case(path: str | Path) -> AuditCase:
    """One case from a JSON file."""
    text = _read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    return AuditCase.from_dict(data, where=f"{Path(path).name}: case")


def load_cases(path: str | Path) -> list[AuditCase]:
    """Cases from a JSONL file, one object per line (blank lines skipped)."""
    cases = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{Path(path).name} line {number}: case"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CaseError(f"{Path(path).name} line {number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        cases.append(AuditCase.from_dict(data, where=where))
    if not cases:
        raise CaseError(f"{path}: no cases (the file is empty)")
    return cases
