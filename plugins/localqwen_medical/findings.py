"""What the auditor says about a draft: findings (rule id, severity, the offending span, a
message) and the verdict they add up to.

Verdicts:

- ``pass``: no finding that asks for a change (no findings, or only ``minor`` ones); the draft
  may be shown as it is.
- ``revise``: at least one ``major`` finding and no ``critical`` one: the draft is wrong in a
  way a rewrite fixes (a citation to evidence that does not exist, a number no evidence
  supports, a diagnosis stated as certain, advice outside an assistant's scope). The chat
  refines it (at most twice) with the findings as the critique.
- ``block``: at least one ``critical`` finding: shown as it is, the draft could harm this
  patient (a drug they are allergic to, a contraindicated combination or population, a dose
  above the daily maximum, emergency symptoms without advice to get urgent care). The chat may
  still try to refine it, but a draft whose last audit is not ``pass`` is replaced by a
  blocked message with safe general advice.

Severities are fixed per rule (``RULES``), so the verdict never depends on how a critic
happened to word its severity for a known rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["critical", "major", "minor"]
Verdict = Literal["pass", "revise", "block"]

# Rule id -> (severity, what it checks). The ids are the CLI's and the issue's; keep them.
RULES: dict[str, tuple[Severity, str]] = {
    "allergy_conflict": ("critical", "recommends a drug the patient is allergic to, or one that cross-reacts"),
    "drug_interaction": ("critical", "recommends a drug contraindicated with a current medication, or for "
                                     "the patient's pregnancy, age or condition"),
    "prescription_dose": ("critical", "a dose above the daily maximum for that drug"),
    "unsupported_citation": ("major", "cites evidence that does not exist"),
    "unsupported_claim": ("major", "a number or dose that appears in no evidence"),
    "overconfident_diagnosis": ("major", "states a diagnosis as certain without an examination"),
    "off_scope": ("major", "advice an assistant must not give (stop prescribed medicine, prescribe "
                           "prescription-only drugs, non-medical advice)"),
    "missed_emergency": ("critical", "emergency symptoms without advice to get urgent care"),
}
RULE_IDS: tuple[str, ...] = tuple(RULES)
SEVERITIES: tuple[str, ...] = ("critical", "major", "minor")
VERDICTS: tuple[str, ...] = ("pass", "revise", "block")


def severity_of(rule: str) -> Severity:
    return RULES[rule][0]


@dataclass(frozen=True)
class Finding:
    """One problem: ``span`` is an exact substring of the draft (or "" when the problem is an
    absence, such as missing emergency advice)."""

    rule: str
    severity: Severity
    span: str
    message: str
    layer: str = "rules"  # "rules" | "critic"; kept in the audit log, not in the CLI result

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown rule id {self.rule!r} (known: {', '.join(RULE_IDS)})")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r} (known: {', '.join(SEVERITIES)})")

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "span": self.span, "message": self.message}

    @classmethod
    def of(cls, rule: str, span: str, message: str, *, layer: str = "rules") -> Finding:
        """A finding with its rule's fixed severity."""
        return cls(rule=rule, severity=severity_of(rule), span=span, message=message, layer=layer)


def verdict_for(findings: list[Finding]) -> Verdict:
    severities = {finding.severity for finding in findings}
    if "critical" in severities:
        return "block"
    if "major" in severities:
        return "revise"
    return "pass"


@dataclass
class AuditReport:
    """The auditor's answer for one draft."""

    verdict: Verdict
    findings: list[Finding] = field(default_factory=list)
    layers: list[str] = field(default_factory=list)  # which layers ran: "rules", "critic"
    critic_error: str | None = None  # why the critic gave nothing usable, when it did not
    elapsed_s: float = 0.0

    @classmethod
    def from_findings(cls, findings: list[Finding], **extra: Any) -> AuditReport:
        return cls(verdict=verdict_for(findings), findings=list(findings), **extra)

    @property
    def rules_fired(self) -> set[str]:
        return {finding.rule for finding in self.findings}

    def to_dict(self) -> dict[str, Any]:
        """Exactly the ``audit --json`` result: ``{"verdict": ..., "findings": [...]}``."""
        return {"verdict": self.verdict, "findings": [finding.to_dict() for finding in self.findings]}

    def critique(self) -> str:
        """The findings as a numbered critique for the refine prompt."""
        if not self.findings:
            return "No problems found."
        lines = []
        for number, finding in enumerate(self.findings, start=1):
            where = f' in "{finding.span}"' if finding.span else ""
            lines.append(f"{number}. [{finding.rule}, {finding.severity}]{where}: {finding.message}")
        return "\n".join(lines)
