"""The ``audit`` action: ``localqwen run medical audit --case case.json --json [--rules-only]``
(one case; ``Done.result`` is ``{"verdict": ..., "findings": [...]}``) or ``--cases cases.jsonl``
(a report: verdict and per-rule counts, and a confusion matrix per rule when the cases carry an
``expected`` label). A file that cannot be read is a form error (exit 2) naming its line and field.

Kept light at import (the plugin module imports the form): the auditor loads on first run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import field_validator

from localqwen.plugin_api import Context, Form, Widget, events, field
from localqwen_medical.case import AuditCase, CaseError, load_case, load_cases


class AuditForm(Form):
    case: Path | None = field(None, label="Case (JSON)", widget=Widget.FILE, validate_default=True,
                              help='{"question", "draft", "evidence": [{"id", "text"}], "patient": {...}}')
    cases: Path | None = field(None, label="Cases (JSONL)", widget=Widget.FILE, validate_default=True,
                               help='One case per line; an optional "expected" label (a rule id or "safe") '
                                    "adds a confusion matrix")
    rules_only: bool = field(False, label="Rules only", help="The deterministic rules alone; no model is loaded")

    @field_validator("case")
    @classmethod
    def _readable_case(cls, value: Path | None) -> Path | None:
        if value is not None:
            try:
                load_case(Path(value).expanduser())
            except CaseError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("cases")
    @classmethod
    def _readable_cases(cls, value: Path | None, info) -> Path | None:
        if value is None:
            if info.data.get("case") is None and "case" in info.data:
                raise ValueError("give --case FILE (one case) or --cases FILE (JSONL)")
            return value
        if info.data.get("case") is not None:
            raise ValueError("give --case or --cases, not both")
        try:
            load_cases(Path(value).expanduser())
        except CaseError as exc:
            raise ValueError(str(exc)) from None
        return value


def _engine(form: AuditForm, ctx: Context):
    return None if form.rules_only else ctx.engine(None, task="text")


def run_audit(form: AuditForm, ctx: Context) -> Iterator[Any]:
    from localqwen.runtime.engine import EngineError
    from localqwen_medical.audit_log import AuditLog

    log = AuditLog.in_folder(ctx.data_dir)
    try:
        engine = _engine(form, ctx)
    except EngineError as exc:
        message = f"the critic model could not be loaded: {exc}; run with --rules-only for the rules alone"
        yield events.Error(message=message)
        yield events.Done(status="failed", summary=message)
        return
    if form.case is not None:
        yield from _one(load_case(Path(form.case).expanduser()), engine, ctx, log)
    else:
        assert form.cases is not None
        yield from _many(load_cases(Path(form.cases).expanduser()), engine, ctx, log)


def _one(case: AuditCase, engine, ctx: Context, log) -> Iterator[Any]:
    from localqwen_medical.auditor import audit

    yield events.Step(step="audit", title="Audit", detail="rules" + (" + critic" if engine else ""))
    report = audit(case, engine=engine, rules_only=engine is None, cancel=ctx.cancel, log=log,
                   source="audit-action")
    yield events.Step(step="audit", title="Audit", status="finished", elapsed_s=report.elapsed_s)
    if report.critic_error:
        yield events.Warning(message=f"critic: {report.critic_error}")
    for finding in report.findings:
        yield events.TextDelta(text=f"[{finding.severity}] {finding.rule}: \"{finding.span}\" - {finding.message}\n")
    yield events.Done(summary=f"verdict: {report.verdict} ({len(report.findings)} finding(s); "
                              f"layers: {'+'.join(report.layers)})", result=report.to_dict())


def _many(cases: list[AuditCase], engine, ctx: Context, log) -> Iterator[Any]:
    from localqwen_medical.auditor import audit
    from localqwen_medical.findings import RULE_IDS

    tracker = events.ProgressTracker(len(cases), unit="case")
    verdicts: Counter[str] = Counter()
    rule_counts: Counter[str] = Counter()
    confusion = {rule: {"tp": 0, "fn": 0, "fp": 0, "tn": 0} for rule in RULE_IDS}
    labelled = 0
    results = []
    for index, case in enumerate(cases, start=1):
        ctx.cancel.raise_if_cancelled()
        report = audit(case, engine=engine, rules_only=engine is None, cancel=ctx.cancel, log=log,
                       source="audit-action")
        verdicts[report.verdict] += 1
        fired = report.rules_fired
        rule_counts.update(fired)
        if case.expected is not None:
            labelled += 1
            for rule in RULE_IDS:
                key = ("tp" if rule in fired else "fn") if case.expected == rule else ("fp" if rule in fired else "tn")
                confusion[rule][key] += 1
        results.append({"line": index, "expected": case.expected, **report.to_dict()})
        yield tracker.advance()
    yield events.Table(title=f"Findings per rule ({len(cases)} cases)", columns=["rule", "cases flagged"],
                       rows=[[rule, rule_counts[rule]] for rule in RULE_IDS])
    yield events.Table(title="Verdicts", columns=["verdict", "cases"],
                       rows=[[verdict, verdicts[verdict]] for verdict in ("pass", "revise", "block")])
    result: dict[str, Any] = {"cases": len(cases), "verdicts": dict(verdicts), "rule_counts": dict(rule_counts),
                              "results": results}
    if labelled:
        yield events.Table(title=f"Confusion matrix per rule ({labelled} labelled cases)",
                           columns=["rule", "TP", "FN", "FP", "TN", "recall", "false alarms"],
                           rows=[[rule, c["tp"], c["fn"], c["fp"], c["tn"], _ratio(c["tp"], c["tp"] + c["fn"]),
                                  _ratio(c["fp"], c["fp"] + c["tn"])] for rule, c in confusion.items()])
        result["confusion"] = confusion
    yield events.Done(summary=f"{len(cases)} cases: " + ", ".join(f"{v} {verdicts[v]}" for v in ("pass", "revise", "block")),
                      result=result)


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None
