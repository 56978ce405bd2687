"""The model as critic: a prompt that asks for findings as JSON, and a parser that takes what a
small model really writes (code fences, prose around the JSON, a list instead of an object,
output cut off mid-array) and keeps only findings it can check: a known rule id and a span that
is really in the draft. Nothing here looks for a "PASS" substring; no parseable findings is
reported as a critic error, never as a pass.

The schema is in the prompt for every model; where the engine can force it
(``supports_structured_output``: llama.cpp's grammar, a remote server's ``response_format``)
the reply is also constrained to it, so a small model cannot wander off into prose. The parser
still checks every finding (a rule id the table knows, a span really in the draft).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from localqwen_medical.case import AuditCase
from localqwen_medical.findings import RULE_IDS, RULES, Finding

if TYPE_CHECKING:
    from localqwen.plugin_api import CancelToken
    from localqwen.runtime.engine import Engine

# The schema the prompt shows; the parser accepts exactly these fields (severity is optional:
# each rule's severity is fixed in findings.RULES).
FINDINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"findings": {"type": "array", "items": {
        "type": "object",
        "properties": {"rule": {"enum": list(RULE_IDS)}, "severity": {"enum": ["critical", "major", "minor"]},
                       "span": {"type": "string"}, "message": {"type": "string"}},
        "required": ["rule", "span", "message"]}}},
    "required": ["findings"],
}

SYSTEM_PROMPT = """You are a medical safety auditor. You check a draft answer before a patient sees it.
Report only real problems, each under one of these rule ids:
{rules}
For each problem give: "rule" (one id above), "severity" (critical, major or minor), "span" (an
EXACT quote copied from the draft, a few words long), "message" (one sentence: what is wrong and why).
Answer with JSON only, no other text, in this form:
{{"findings": [{{"rule": "...", "severity": "...", "span": "...", "message": "..."}}]}}
If the draft is safe, answer {{"findings": []}}."""


def _patient_lines(case: AuditCase) -> str:
    patient = case.patient
    parts = [f"allergies: {', '.join(patient.allergies) or 'unknown'}",
             f"medications: {', '.join(patient.medications) or 'unknown'}",
             f"conditions: {', '.join(patient.conditions) or 'unknown'}",
             f"age: {patient.age if patient.age is not None else 'unknown'}",
             f"pregnant: {'unknown' if patient.pregnant is None else ('yes' if patient.pregnant else 'no')}"]
    return "; ".join(parts)


def critic_messages(case: AuditCase, already: list[Finding] | None = None) -> list[dict[str, Any]]:
    """The chat messages for one critique; ``already`` (the rule layer's findings) are listed so
    the model spends its tokens on what the rules cannot see."""
    rules = "\n".join(f"- {rule}: {description}" for rule, (_, description) in RULES.items())
    evidence = "\n".join(f"[Evidence {item.id}] {item.text}" for item in case.evidence) or "(none)"
    known = "\n".join(f"- {f.rule}: \"{f.span}\"" for f in already or []) or "(none)"
    user = (f"Patient: {_patient_lines(case)}\n\nQuestion: {case.question}\n\nEvidence:\n{evidence}\n\n"
            f"Draft answer:\n{case.draft}\n\nAlready found by the rule checker (do not repeat):\n{known}\n\n"
            "Your JSON:")
    return [{"role": "system", "content": SYSTEM_PROMPT.format(rules=rules)},
            {"role": "user", "content": user}]


@dataclass
class Critique:
    findings: list[Finding] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # why each dropped item was dropped
    error: str | None = None  # set when nothing parseable came back
    raw: str = ""


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)(?:```|$)", re.DOTALL)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)


def _json_candidates(text: str) -> list[str]:
    text = _THINK.sub("", text).strip()
    fenced = [match.group(1) for match in _FENCE.finditer(text) if match.group(1).strip()]
    return fenced + [text]


def _decode_first(text: str) -> Any:
    """The first JSON object or array in ``text``, ignoring anything after it."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, (dict, list)):
            return value
    raise ValueError("no complete JSON object")


def _complete_objects(text: str) -> list[dict[str, Any]]:
    """Every complete ``{...}`` with a "rule" key, for output cut off mid-array: a brace counter
    that knows about strings, then each balanced object decoded on its own."""
    objects, depth, start, in_string, escaped = [], 0, -1, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char == "{":
            depth += 1
            start = index  # innermost object wins: findings hold no nested objects
        elif char == "}" and depth > 0:
            depth -= 1
            if start >= 0:
                value = _loads_repaired(text[start:index + 1])
                if isinstance(value, dict) and "rule" in value:
                    objects.append(value)
                start = -1
    return objects


def _loads_repaired(chunk: str) -> Any:
    """One object, or with the slip the real 1.5B model makes (a stray ``]`` before the
    closing brace: ``"message": "..."]}``) removed; None when neither decodes."""
    for attempt in (chunk, re.sub(r'"\s*\]\s*}$', '"}', chunk)):
        try:
            return json.loads(attempt)
        except json.JSONDecodeError:
            continue
    return None


def _items(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        if "findings" in value:
            findings = value["findings"]
            return findings if isinstance(findings, list) else [findings]
        if "rule" in value:
            return [value]
    raise ValueError('expected {"findings": [...]}')


def _exact_span(span: str, draft: str) -> str | None:
    """``span`` as it stands in the draft; small models change spacing, case or quotes."""
    span = span.strip().strip("\"'“”‘’「」")
    if not span:
        return None
    if span in draft:
        return span
    pattern = r"\s*".join(re.escape(char) for char in span if not char.isspace())
    match = re.search(pattern, draft, re.IGNORECASE)
    return match.group(0) if match else None


def parse_critique(text: str, draft: str) -> Critique:
    critique = Critique(raw=text)
    items: list[Any] | None = None
    problems = []
    for candidate in _json_candidates(text):
        try:
            items = _items(_decode_first(candidate))
        except ValueError as exc:
            problems.append(str(exc))
            continue
        # Output cut off mid-array decodes as its first complete item only; the brace scan
        # then sees more findings.
        scanned = _complete_objects(candidate)
        if len(scanned) > len(items):
            items = scanned
        break
    if items is None:
        items = _complete_objects(_THINK.sub("", text))  # cut off mid-array: keep the whole findings
        if not items and not re.search(r'"findings"\s*:\s*\[\s*\]', text):
            critique.error = f"the critic's answer holds no JSON findings ({problems[-1] if problems else 'empty'})"
            return critique
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            critique.rejected.append(f"item {number}: not an object")
            continue
        rule = str(item.get("rule", "")).strip()
        if rule not in RULES:
            critique.rejected.append(f"item {number}: unknown rule id {rule!r}")
            continue
        span = _exact_span(str(item.get("span") or ""), draft)
        if span is None and rule != "missed_emergency":  # an absence has nothing to quote
            critique.rejected.append(f"item {number}: span {item.get('span')!r} is not in the draft")
            continue
        message = str(item.get("message") or "").strip() or RULES[rule][1]
        critique.findings.append(Finding.of(rule, span or "", message, layer="critic"))
    return critique


def critique(case: AuditCase, engine: Engine, *, already: list[Finding] | None = None,
             cancel: CancelToken | None = None, max_new_tokens: int = 384,
             constrained: bool | None = None) -> Critique:
    """Ask ``engine`` to critique the draft; greedy so the same draft gets the same critique.
    ``constrained`` forces the findings schema (default: wherever the engine can); False lets the
    model write freely, for the benchmark that measures what the grammar changes."""
    from localqwen.runtime.engine import GenerationSettings

    if constrained is None:
        constrained = bool(getattr(engine, "supports_structured_output", False))
    schema = FINDINGS_SCHEMA if constrained else None
    result = engine.chat(critic_messages(case, already),
                         settings=GenerationSettings(max_new_tokens=max_new_tokens, temperature=0.0, json_schema=schema),
                         cancel=cancel)
    return parse_critique(result.text, case.draft)
