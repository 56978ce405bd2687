"""``localqwen run medical audit`` through the real CLI (Typer's runner): one case as JSON, a
JSONL report with a confusion matrix, and bad files -> exit 2 naming the line and field."""

from __future__ import annotations

import json

from localqwen_medical.audit_log import AuditLog
from typer.testing import CliRunner

from localqwen.cli.main import app

runner = CliRunner()
CASE = {"question": "Headache, what can I take?", "draft": "Take amoxicillin [Evidence 2].",
        "evidence": [{"id": 1, "text": "Paracetamol helps headaches."}],
        "patient": {"allergies": ["penicillin"], "medications": [], "conditions": [], "age": None, "sex": None,
                    "pregnant": None}}


def run(*args):
    return runner.invoke(app, ["run", "medical", "audit", *args])


def test_one_case_json(tmp_path, isolated_home):
    path = tmp_path / "case.json"
    path.write_text(json.dumps(CASE), encoding="utf-8")
    result = run("--case", str(path), "--json", "--rules-only")
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout.splitlines()[-1])
    assert done["kind"] == "done" and set(done["result"]) == {"verdict", "findings"}
    assert done["result"]["verdict"] == "block"
    assert [(f["rule"], f["span"]) for f in done["result"]["findings"]] == [
        ("allergy_conflict", "amoxicillin"), ("unsupported_citation", "[Evidence 2]")]
    assert set(done["result"]["findings"][0]) == {"rule", "severity", "span", "message"}
    (record,) = AuditLog(next(isolated_home.rglob("audit_log.jsonl"))).read()
    assert record["verdict"] == "block" and record["source"] == "audit-action"


def test_cases_report_with_confusion_matrix(tmp_path):
    safe = {**CASE, "draft": "Avoid amoxicillin; paracetamol helps [Evidence 1].", "expected": "safe"}
    lines = [json.dumps({**CASE, "expected": "allergy_conflict"}), json.dumps(safe)]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("--cases", str(path), "--json", "--rules-only")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["title"] for e in events if e["kind"] == "table"][-1].startswith("Confusion matrix")
    report = events[-1]["result"]
    assert report["verdicts"] == {"block": 1, "pass": 1}
    assert report["confusion"]["allergy_conflict"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 1}


def test_bad_files_exit_2_naming_line_and_field(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(CASE) + "\n" + json.dumps({**CASE, "patient": {"age": "old"}}) + "\n", encoding="utf-8")
    result = run("--cases", str(path), "--rules-only")
    assert result.exit_code == 2 and "line 2" in result.output and "patient.age" in result.output
    bad = tmp_path / "case.json"
    bad.write_text("{not json", encoding="utf-8")
    result = run("--case", str(bad), "--rules-only")
    assert result.exit_code == 2 and "invalid JSON" in result.output
    result = run("--rules-only")
    assert result.exit_code == 2 and "--case" in result.output
