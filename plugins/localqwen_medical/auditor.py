"""The auditor: the deterministic rules first, then (unless ``rules_only`` or there is no
engine) the model as critic; findings merged without duplicates; the verdict from
``findings.verdict_for``. See findings.py for what each verdict means."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from localqwen_medical.case import AuditCase
from localqwen_medical.findings import AuditReport, Finding
from localqwen_medical.rules import run_rules

if TYPE_CHECKING:
    from localqwen.plugin_api import CancelToken
    from localqwen.runtime.engine import Engine
    from localqwen_medical.audit_log import AuditLog


def merge_findings(first: list[Finding], second: list[Finding]) -> list[Finding]:
    """``first`` then what ``second`` adds: a finding is a duplicate when an earlier one has the
    same rule and an overlapping span (the critic quoting more or less of what a rule found)."""
    merged: list[Finding] = []
    for finding in [*first, *second]:
        if any(f.rule == finding.rule and _overlap(f.span, finding.span) for f in merged):
            continue
        merged.append(finding)
    return merged


def drop_negated_drug_findings(case: AuditCase, findings: list[Finding]) -> list[Finding]:
    """Critic findings of the drug rules whose span names only drugs the draft negates
    ("Do not take Bactrim since you are allergic to sulfa drugs"): the rule layer reads negation
    and the table; the real 1.5B critic flagged such warnings as the danger they warn about."""
    from localqwen_medical.drug_table import drug_table
    from localqwen_medical.rules import is_negated

    table = drug_table()
    kept = []
    for finding in findings:
        if finding.rule in ("allergy_conflict", "drug_interaction") and finding.span:
            offset = case.draft.find(finding.span)
            mentions = [m for m in table.find_drugs(case.draft)
                        if offset >= 0 and offset <= m.start < offset + len(finding.span)]
            if mentions and all(is_negated(case.draft, m.start, m.end) for m in mentions):
                continue
        kept.append(finding)
    return kept


def _overlap(a: str, b: str) -> bool:
    if not a or not b:
        return a == b
    return a in b or b in a


def audit(case: AuditCase, *, engine: Engine | None = None, rules_only: bool = False,
          cancel: CancelToken | None = None, log: AuditLog | None = None, source: str = "audit",
          round: int | None = None) -> AuditReport:  # noqa: A002 - the refine round
    started = time.perf_counter()
    findings = run_rules(case)
    layers = ["rules"]
    critic_error = None
    if not rules_only and engine is not None:
        from localqwen_medical.critic import critique

        if cancel is not None:
            cancel.raise_if_cancelled()
        result = critique(case, engine, already=findings, cancel=cancel)
        layers.append("critic")
        critic_error = result.error
        findings = merge_findings(findings, drop_negated_drug_findings(case, result.findings))
    report = AuditReport.from_findings(findings, layers=layers, critic_error=critic_error,
                                       elapsed_s=time.perf_counter() - started)
    if log is not None:
        log.append(case, report, source=source, round=round)
    return report
