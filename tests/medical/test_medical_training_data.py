"""medical-sft / medical-dpo: trainer data built from the audit log the chat writes."""

from __future__ import annotations

import json

import pytest
from localqwen_medical.audit_log import AuditLog
from localqwen_medical.auditor import audit
from localqwen_medical.case import AuditCase, Patient
from localqwen_medical.training_data import dpo_rows, register, sft_rows

from localqwen.plugin_api.extensions import Extensions
from localqwen.training.data import read_rows, validate_rows
from localqwen.training.data_sources import build_data_source

QUESTION = "I'm allergic to penicillin. What can I take for strep throat?"
UNSAFE = "Take amoxicillin 500 mg three times a day for strep throat."
SAFE = "Because of your penicillin allergy, avoid amoxicillin; ask your doctor about azithromycin."


def _log(tmp_path):
    log = AuditLog(tmp_path / "audit_log.jsonl")
    patient = Patient(allergies=["penicillin"])
    for round_, draft in ((0, UNSAFE), (1, SAFE)):
        case = AuditCase(question=QUESTION, draft=draft, patient=patient)
        log.append(case, audit(case, rules_only=True), source="chat", round=round_)
    blocked = AuditCase(question="I'm allergic to penicillin. Can I take amoxicillin?", draft=UNSAFE, patient=patient)
    log.append(blocked, audit(blocked, rules_only=True), source="chat", round=0)  # never passed: no rows
    return log.path


def test_rows_pair_the_passed_answer_with_the_failed_draft(tmp_path):
    records = AuditLog(_log(tmp_path)).read()
    assert [r["verdict"] for r in records][:2] != ["pass", "pass"]
    assert sft_rows(records) == [{"messages": [{"role": "user", "content": QUESTION},
                                               {"role": "assistant", "content": SAFE}]}]
    assert dpo_rows(records) == [{"prompt": QUESTION, "chosen": SAFE, "rejected": UNSAFE, "origin": "audit"}]


def test_registered_sources_build_valid_trainer_files(tmp_path):
    extensions = Extensions()
    register(extensions)
    assert {"medical-sft", "medical-dpo"} <= set(extensions.data_sources)
    log = _log(tmp_path)
    sft = build_data_source(extensions.data_sources, "medical-sft", tmp_path / "sft", audit_log=str(log))
    dpo = build_data_source(extensions.data_sources, "medical-dpo", tmp_path / "dpo", audit_log=str(log))
    for path, objective in ((sft, "sft"), (dpo, "dpo")):
        report = validate_rows(read_rows(path), objective)
        assert report.ok and len(report.valid) >= 1, report.problems
    assert json.loads(dpo.read_text().splitlines()[0])["rejected"] == UNSAFE


def test_clear_errors_without_runs(tmp_path):
    extensions = Extensions()
    register(extensions)
    with pytest.raises(FileNotFoundError, match="no audit log"):
        build_data_source(extensions.data_sources, "medical-sft", tmp_path / "a", audit_log=str(tmp_path / "none.jsonl"))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="no DPO rows"):
        build_data_source(extensions.data_sources, "medical-dpo", tmp_path / "b", audit_log=str(empty), planted=False)


def test_planted_pairs_share_the_question_and_the_rules_tell_them_apart():
    # Chosen and rejected answer the same prompt; the rule layer passes the chosen one and
    # flags the rejected one, for every rule class the rules can judge alone.
    import dataclasses

    from localqwen_medical.rules import run_rules
    from localqwen_medical.safety_cases import BUILDERS, pairs
    from localqwen_medical.training_data import planted_rows

    found = pairs(per_class=4, seed=1)
    # every class gives pairs but unsupported_claim, whose drafts are the same (the evidence differs)
    assert {family for _, _, family in found} == set(BUILDERS) - {"unsupported_claim"}
    for safe, unsafe, _ in found:
        assert safe.question == unsafe.question and safe.draft != unsafe.draft
    judged = [(safe, unsafe) for safe, unsafe, family in found
              if family in ("allergy_conflict", "drug_interaction", "prescription_dose")]
    assert len(judged) == 12
    for safe, unsafe in judged:
        with_safe_evidence = dataclasses.replace(unsafe, evidence=safe.evidence)  # what the DPO prompt shows
        assert not run_rules(safe) and run_rules(with_safe_evidence), (safe, unsafe)
    rows = planted_rows(seed=1, per_class=4)
    assert len(rows) == len(found)
    allergy = next(r for r in rows if r["origin"] == "planted:allergy_conflict" and "Patient profile" in r["prompt"])
    assert allergy["prompt"].startswith("Patient profile: allergies: ")
