"""The auditor end to end: rules, then a real (tiny, taught) model as critic; merging,
verdicts and the audit log."""

from __future__ import annotations

import json
import threading

import pytest
from localqwen_medical.audit_log import AuditLog, case_digest
from localqwen_medical.auditor import audit, merge_findings
from localqwen_medical.case import AuditCase, Evidence, Patient
from localqwen_medical.critic import critic_messages
from localqwen_medical.findings import Finding
from localqwen_medical.rules import run_rules

# The rules cannot see this one: a diagnosis stated flatly, with no "definitely".
CASE = AuditCase("I have an itchy rash on my elbows, what is it?",
                 "This rash is eczema. Use a moisturiser twice a day [Evidence 1].",
                 [Evidence(1, "Moisturisers help eczema; apply twice a day.")], Patient())
CRITIQUE = json.dumps({"findings": [{"rule": "overconfident_diagnosis", "severity": "major",
                                      "span": "This rash is eczema",
                                      "message": "names the diagnosis as fact without an examination"}]})


def test_rules_only_pass_and_block():
    report = audit(CASE, rules_only=True)
    assert report.verdict == "pass" and report.findings == [] and report.layers == ["rules"]
    unsafe = AuditCase("Headache", "Take amoxicillin.", patient=Patient(allergies=["penicillin"]))
    report = audit(unsafe)  # no engine: the rules alone
    assert report.verdict == "block"
    assert report.to_dict() == {"verdict": "block", "findings": [
        {"rule": "allergy_conflict", "severity": "critical", "span": "amoxicillin",
         "message": report.findings[0].message}]}


def test_revise_for_fixable_findings():
    case = AuditCase("Cold?", "Rest helps [Evidence 4].", [Evidence(1, "Rest helps.")])
    assert audit(case).verdict == "revise"


def test_merge_drops_overlapping_duplicates():
    rule = Finding.of("prescription_dose", "800 mg", "rule says")
    same = Finding.of("prescription_dose", "ibuprofen 800 mg", "critic says", layer="critic")
    other = Finding.of("unsupported_claim", "800 mg", "critic says", layer="critic")
    assert merge_findings([rule], [same, other]) == [rule, other]


def test_audit_log_appends_and_reads_back(tmp_path):
    log = AuditLog.in_folder(tmp_path)
    threads = [threading.Thread(target=audit, args=(CASE,), kwargs={"rules_only": True, "log": log})
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with log.path.open("a", encoding="utf-8") as handle:
        handle.write('{"torn": ')  # a crash mid-write
    records = log.read()
    assert len(records) == 8 and {r["case"] for r in records} == {case_digest(CASE)}
    assert records[0]["verdict"] == "pass" and records[0]["layers"] == ["rules"]
    assert len(log.read(limit=3)) == 3


@pytest.fixture(scope="module")
def critic_engine(tmp_path_factory, tiny_qwen3_path):
    """A real tiny Qwen3 taught to answer this case's critic prompt with CRITIQUE."""
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen.testing.tiny_models import teach_reply

    messages = critic_messages(CASE, run_rules(CASE))
    path = teach_reply(tiny_qwen3_path, tmp_path_factory.mktemp("critic"), messages, CRITIQUE, steps=80)
    engine = TransformersEngine(path)
    yield engine
    engine.close()


@pytest.mark.slow
def test_critic_layer_adds_what_rules_miss(critic_engine, tmp_path):
    log = AuditLog.in_folder(tmp_path)
    report = audit(CASE, engine=critic_engine, log=log)
    assert report.layers == ["rules", "critic"] and report.critic_error is None
    assert [(f.rule, f.span, f.layer) for f in report.findings] == [
        ("overconfident_diagnosis", "This rash is eczema", "critic")]
    assert report.verdict == "revise"
    assert log.read()[0]["findings"][0]["layer"] == "critic"
    # rules_only never asks the model
    assert audit(CASE, engine=critic_engine, rules_only=True).findings == []


@pytest.mark.slow
def test_garbage_critic_is_an_error_not_a_pass(tiny_qwen3_path):
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    unsafe = AuditCase("Headache", "Take amoxicillin.", patient=Patient(allergies=["penicillin"]))
    with TransformersEngine(tiny_qwen3_path) as engine:  # random weights: no JSON comes back
        report = audit(unsafe, engine=engine)
    assert report.critic_error and report.verdict == "block"


def test_critic_drug_findings_on_negated_warnings_are_dropped():
    from localqwen_medical.auditor import drop_negated_drug_findings

    case = AuditCase("Pain?", "Do not take Bactrim since you are allergic to sulfa drugs. Take Bactrim later.",
                     patient=Patient(allergies=["sulfa drugs"]))
    warning = Finding.of("allergy_conflict", "Do not take Bactrim since you are allergic to sulfa drugs",
                         "critic", layer="critic")
    real = Finding.of("allergy_conflict", "Take Bactrim later", "critic", layer="critic")
    other = Finding.of("overconfident_diagnosis", "Do not take Bactrim", "critic", layer="critic")
    assert drop_negated_drug_findings(case, [warning, real, other]) == [real, other]
