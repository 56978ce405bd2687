"""Case files: round trip, and errors that name the field or the line."""

from __future__ import annotations

import json

import pytest
from localqwen_medical.case import AuditCase, CaseError, Evidence, Patient, load_case, load_cases

CASE = {"question": "Can I take ibuprofen?", "draft": "Take ibuprofen 400 mg [Evidence 1].",
        "evidence": [{"id": 1, "text": "Ibuprofen 200-400 mg every 6 hours."}],
        "patient": {"allergies": ["penicillin"], "medications": ["warfarin"], "conditions": [],
                    "age": 40, "sex": "female", "pregnant": False}}


def test_round_trip(tmp_path):
    path = tmp_path / "case.json"
    path.write_text(json.dumps(CASE), encoding="utf-8")
    case = load_case(path)
    assert case.patient.allergies == ["penicillin"]
    assert case.evidence == [Evidence(1, "Ibuprofen 200-400 mg every 6 hours.")]
    assert case.to_dict() == CASE
    assert AuditCase.from_dict(case.to_dict()) == case


def test_patient_defaults_and_aliases():
    assert Patient.from_dict(None) == Patient()
    patient = Patient.from_dict({"allergies": "青霉素", "sex": "女", "age": 7})
    assert patient.allergies == ["青霉素"] and patient.sex == "female" and patient.age == 7


@pytest.mark.parametrize(("patient", "named"), [
    ({"allergies": [1]}, "patient.allergies"),
    ({"age": "forty"}, "patient.age"),
    ({"age": 300}, "patient.age"),
    ({"pregnant": "yes"}, "patient.pregnant"),
    ({"sex": "robot"}, "patient.sex"),
    ({"weight": 70}, "patient.weight"),
])
def test_patient_errors_name_the_field(patient, named):
    with pytest.raises(CaseError, match=named.replace(".", r"\.")):
        AuditCase.from_dict({**CASE, "patient": patient})


@pytest.mark.parametrize(("change", "named"), [
    ({"draft": 5}, "case.draft"),
    ({"draft": "  "}, "case.draft"),
    ({"evidence": [{"id": 0, "text": "x"}]}, r"case.evidence\[0\].id"),
    ({"evidence": [{"id": 1, "text": "a"}, {"id": 1, "text": "b"}]}, r"case.evidence\[1\].id"),
    ({"evidence": "none"}, "case.evidence"),
])
def test_case_errors_name_the_field(change, named):
    with pytest.raises(CaseError, match=named):
        AuditCase.from_dict({**CASE, **change})


def test_missing_field():
    with pytest.raises(CaseError, match="case.question: missing"):
        AuditCase.from_dict({"draft": "x"})


def test_jsonl_errors_name_the_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(CASE) + "\n\n" + '{"question": "q"}\n', encoding="utf-8")
    with pytest.raises(CaseError, match="cases.jsonl line 3: case.draft: missing"):
        load_cases(path)
    path.write_text(json.dumps(CASE) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(CaseError, match="line 2: invalid JSON"):
        load_cases(path)
    path.write_text(json.dumps(CASE) + "\n" + json.dumps(CASE) + "\n", encoding="utf-8")
    assert len(load_cases(path)) == 2


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(CaseError, match="no such file"):
        load_case(tmp_path / "nope.json")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(CaseError, match="no cases"):
        load_cases(tmp_path / "empty.jsonl")
