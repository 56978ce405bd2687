"""The medical pipeline's own runs as trainer data sources: ``medical-sft`` and ``medical-dpo``.

Both read the audit log (``audit_log.jsonl`` in the plugin's data folder), where the chat writes
every draft and refinement it audited, with the question and the verdict:

- ``medical-sft``: question -> the last answer that passed the audit for it.
- ``medical-dpo``: chosen = that passing answer, rejected = each earlier draft of the same
  question that failed it (verdict revise or block); plus, with ``planted=True``, planted pairs
  from ``safety_cases.pairs``: a safe answer over its unsafe variant (same question and patient),
  up to 8 per rule class.

Rows use the trainer's one format (``messages`` for SFT; ``prompt``/``chosen``/``rejected`` for DPO).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.atomic import atomic_write_text

if TYPE_CHECKING:
    from localqwen.plugin_api import Extensions
    from localqwen_medical.case import AuditCase

FAILED = ("revise", "block")


def default_audit_log() -> Path:
    from localqwen.paths import app_paths

    return app_paths().plugin_data_dir("medical") / "audit_log.jsonl"


def read_audit_records(path: str | Path | None = None) -> list[dict[str, Any]]:
    from localqwen_medical.audit_log import AuditLog

    log = Path(path) if path else default_audit_log()
    if path and not log.is_file():
        raise FileNotFoundError(f"no audit log at {log} (the medical chat writes it; pass audit_log=PATH)")
    return AuditLog(log).read()


def runs_by_question(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per question (in first-seen order): the last passing answer and the failed drafts before it."""
    runs: dict[str, dict[str, Any]] = {}
    for record in records:
        question, draft = str(record.get("question") or "").strip(), str(record.get("draft") or "").strip()
        if not question or not draft:
            continue
        run = runs.setdefault(question, {"passed": None, "failed": []})
        if record.get("verdict") == "pass":
            run["passed"] = draft
        elif record.get("verdict") in FAILED and draft not in run["failed"]:
            run["failed"].append(draft)
    return runs


def sft_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": run["passed"]}]}
            for question, run in runs_by_question(records).items() if run["passed"]]


def dpo_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for question, run in runs_by_question(records).items():
        if not run["passed"]:
            continue  # a blocked question has no answer to prefer
        rows += [{"prompt": question, "chosen": run["passed"], "rejected": failed, "origin": "audit"}
                 for failed in run["failed"] if failed != run["passed"]]
    return rows


def planted_rows(seed: int = 0, per_class: int = 8) -> list[dict[str, Any]]:
    """A safe answer over its planted unsafe variant, one pair per draw and rule class
    (``safety_cases.pairs``): same question and patient, only the draft differs. The prompt carries
    the patient's profile and the safe case's evidence, since the safe answer depends on them."""
    from localqwen_medical.safety_cases import pairs

    return [{"prompt": case_prompt(safe), "chosen": safe.draft, "rejected": unsafe.draft, "origin": f"planted:{family}"}
            for safe, unsafe, family in pairs(per_class=per_class, seed=seed)]


def case_prompt(case: AuditCase) -> str:
    """The question as the chat's model would see it: profile facts and numbered evidence first."""
    patient = case.patient
    facts = [f"{name}: {', '.join(values)}" for name, values in
             (("allergies", patient.allergies), ("medications", patient.medications), ("conditions", patient.conditions))
             if values]
    facts += [f"age: {patient.age:g}"] if patient.age is not None else []
    facts += [f"sex: {patient.sex}"] if patient.sex else []
    facts += [f"pregnant: {'yes' if patient.pregnant else 'no'}"] if patient.pregnant is not None else []
    parts = ["Patient profile: " + "; ".join(facts)] if facts else []
    parts += [f"[Evidence {e.id}] {e.text}" for e in case.evidence]
    return "\n\n".join([*parts, case.question])


def _write(out_dir: Path, rows: list[dict[str, Any]], kind: str) -> Path:
    if not rows:
        raise ValueError(f"no {kind} rows: the audit log holds no question with a passing answer"
                         + (" and a failed draft" if kind == "DPO" else "")
                         + "; chat with the medical plugin first (or pass audit_log=PATH)")
    path = Path(out_dir) / "train.jsonl"
    atomic_write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


def build_medical_sft(out_dir: Path, audit_log: str | None = None) -> Path:
    return _write(out_dir, sft_rows(read_audit_records(audit_log)), "SFT")


def build_medical_dpo(out_dir: Path, audit_log: str | None = None, planted: bool = True, seed: int = 0) -> Path:
    rows = dpo_rows(read_audit_records(audit_log))
    if planted:
        rows += planted_rows(seed)
    return _write(out_dir, rows, "DPO")


def register(extensions: Extensions) -> None:
    """Make the medical data known to the trainer (called by the plugin's ``register`` hook)."""
    extensions.add_data_source("medical-sft", "Medical chat: question -> the audited final answer (audit log)",
                               build_medical_sft)
    extensions.add_data_source("medical-dpo", "Medical chat: answer that passed the audit over the draft that "
                               "failed it (+ planted unsafe variants)", build_medical_dpo)
