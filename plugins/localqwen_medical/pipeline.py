"""One medical turn: route -> chat (answer directly) or medical / complex (rewrite -> retrieve ->
draft with citations -> validate -> audit -> refine with the findings, at most ``max_refinements``
times -> still unsafe: blocked, with the findings and safe general advice).

Every phase is a ``Step`` event; the evidence is a ``Table``; the verdict (pass / revised /
blocked) and its findings are shown and returned in ``Done.result``. Every medical answer ends
with the localised "not a substitute for a clinician" line; a chit-chat reply only when it
mentions a medicine or trips a rule (a greeting needs no disclaimer, health talk always gets one). Works without a model (``llm=None``): rules
route, the term list rewrites, the draft is extractive, the auditor runs its rule layer and the
refine removes what the findings point at.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from localqwen.plugin_api import events
from localqwen_medical import grounding
from localqwen_medical.case import AuditCase, Evidence, Patient
from localqwen_medical.evidence import (
    DEFAULT_MIN_RELEVANCE,
    DEFAULT_MIN_SIMILARITY,
    EvidenceSet,
    Passage,
    gather,
)
from localqwen_medical.rewrite import rewrite
from localqwen_medical.router import route

EXCERPT_CHARS = 160


@dataclass
class TurnInputs:
    question: str
    history: list[dict[str, Any]] = field(default_factory=list)  # plain earlier messages (summary memory's plan)
    patient: Patient = field(default_factory=Patient)
    patient_summary: str = ""
    kb: Any = None  # anything with search(query, k); None: no knowledge base
    kb_name: str = ""
    k: int = 5
    min_relevance: float = DEFAULT_MIN_RELEVANCE
    min_similarity: float = DEFAULT_MIN_SIMILARITY
    llm: Any = None  # complete(system, user, max_new_tokens=) and chat(messages); None: rules only
    engine: Any = None  # the auditor's critic engine; None: the rule layer only
    max_refinements: int = 2
    audit_log: Any = None
    cancel: Any = None


@dataclass
class AuditRound:
    round: int
    verdict: str
    findings: list[dict[str, Any]]


def run_turn(inputs: TurnInputs) -> Iterator[Any]:
    """The turn's events, ending with one ``Done`` whose result says what happened."""
    question = inputs.question.strip()
    language = grounding.language_of(question)
    started = time.perf_counter()

    yield events.Step(step="route", title="Route")
    found = route(question, inputs.llm)
    yield events.Step(step="route", title="Route", status="finished",
                      detail=f"{found.intent} ({found.confidence:.2f}, {found.source}): {found.reason}")
    result: dict[str, Any] = {"intent": found.intent, "route": found.to_dict()}
    if found.intent == "chat":
        answer = _chat_answer(inputs, question, language)
        text = f"{answer}\n\n{grounding.line('disclaimer', language)}" if _touches_medicine(question, answer) else answer
        yield events.TextDelta(text=text)
        yield events.Done(summary="chat", result={**result, "verdict": "pass", "answer": text, **_usage(inputs)},
                          elapsed_s=time.perf_counter() - started)
        return

    parts = found.parts if found.intent == "complex" and len(found.parts) > 1 else [question]
    queries = []
    for index, part in enumerate(parts, start=1):
        step = "rewrite" if len(parts) == 1 else f"rewrite-{index}"
        yield events.Step(step=step, title="Rewrite" if len(parts) == 1 else f"Rewrite part {index}")
        rewritten = rewrite(part, inputs.llm)
        queries.append(rewritten.query)
        yield events.Step(step=step, title="Rewrite" if len(parts) == 1 else f"Rewrite part {index}",
                          status="finished", detail=f"{rewritten.query}  ({rewritten.source})")
    result["queries"] = queries
    _check_cancel(inputs)

    yield events.Step(step="retrieve", title="Evidence")
    evidence = _retrieve(inputs, queries)
    passages = evidence.passages
    detail = (f"{len(passages)} passage(s) from {inputs.kb_name or 'the knowledge base'}"
              if inputs.kb is not None else "no knowledge base chosen")
    if inputs.kb is not None and not passages:
        detail += f"; none relevant enough (best {evidence.best_relevance:.2f})"
    yield events.Step(step="retrieve", title="Evidence", status="finished", detail=detail)
    if passages:
        yield events.Table(title="Evidence", columns=["#", "source", "relevance", "passage"],
                           rows=[[p.id, p.where(), round(p.relevance, 2), _excerpt(p.text)] for p in passages])
    result["evidence"] = [p.to_dict() for p in passages]
    _check_cancel(inputs)

    yield events.Step(step="draft", title="Draft")
    if not passages:
        draft, how = grounding.insufficient_answer(language), "insufficient evidence"
    elif inputs.llm is not None:
        draft = grounding.model_draft(inputs.llm, question, passages, patient_summary=inputs.patient_summary,
                                      history=inputs.history)
        how = "model"
        if not draft.strip():
            draft, how = grounding.extractive_draft(question, passages, language=language), "extractive (empty model reply)"
    else:
        draft, how = grounding.extractive_draft(question, passages, language=language), "extractive"
    checked = grounding.validate(draft, passages)
    note = f"{how}; cites {checked.cited or 'nothing'}"
    if checked.removed_ids:
        note += f"; removed citations to missing evidence {checked.removed_ids}"
    if checked.unsupported:
        note += f"; numbers in no evidence: {', '.join(checked.unsupported)}"
    yield events.Step(step="draft", title="Draft", status="finished", detail=note)
    result["draft"] = {"how": how, **checked.to_dict()}

    final, verdict, rounds = yield from _audit_loop(inputs, question, checked.text, passages, language)
    result["audits"] = [r.__dict__ for r in rounds]
    result["verdict"] = verdict
    result["findings"] = rounds[-1].findings if rounds else []
    text = f"{final}\n\n{grounding.line('disclaimer', language)}"
    result["answer"] = text
    result.update(_usage(inputs))
    yield events.TextDelta(text=text)
    yield events.Done(summary=f"{found.intent}: {verdict}", result=result, elapsed_s=time.perf_counter() - started)


def _audit_loop(inputs: TurnInputs, question: str, draft: str, passages: list[Passage],
                language: str) -> Iterator[Any]:
    """Audit, refine at most ``max_refinements`` times; returns (answer, verdict, rounds)."""
    from localqwen_medical.auditor import audit

    evidence = [Evidence(id=p.id, text=p.text) for p in passages]
    rounds: list[AuditRound] = []
    current = draft
    for number in range(inputs.max_refinements + 1):
        _check_cancel(inputs)
        title = "Audit" if number == 0 else f"Audit after refine {number}"
        yield events.Step(step=f"audit-{number}", title=title)
        case = AuditCase(question=question, draft=current or "(empty)", evidence=evidence, patient=inputs.patient)
        report = audit(case, engine=inputs.engine, rules_only=inputs.engine is None, cancel=inputs.cancel,
                       log=inputs.audit_log, source="chat", round=number)
        findings = [f.to_dict() for f in report.findings]
        rounds.append(AuditRound(number, report.verdict, findings))
        yield events.Step(step=f"audit-{number}", title=title, status="finished",
                          detail=f"{report.verdict}: {len(findings)} finding(s)"
                                 + (f" (critic: {report.critic_error})" if report.critic_error else ""))
        if findings:
            yield events.Table(title=f"Findings ({title.lower()})", columns=["rule", "severity", "span", "message"],
                               rows=[[f["rule"], f["severity"], f["span"], f["message"]] for f in findings])
        if report.verdict == "pass":
            return current, "pass" if number == 0 else "revised", rounds
        if number == inputs.max_refinements:
            break
        yield events.Step(step=f"refine-{number + 1}", title=f"Refine {number + 1}")
        revised = _refine(inputs, question, current, report, passages, language)
        revised = grounding.validate(revised, passages).text if revised.strip() else ""
        yield events.Step(step=f"refine-{number + 1}", title=f"Refine {number + 1}", status="finished",
                          detail="model" if inputs.llm is not None else
                          ("removed the flagged sentences" if revised.strip() else "nothing safe left to say"))
        if not revised.strip() or revised.strip() == current.strip():
            break  # nothing left to say safely, or nothing changed: another audit would say the same
        current = revised
    last = rounds[-1]
    reasons = "\n".join(f"- {f['rule']}: {f['message']}" for f in last.findings)
    blocked = f"{grounding.line('blocked', language)}\n{reasons}\n\n{grounding.line('blocked_advice', language)}"
    return blocked, "blocked", rounds


def _refine(inputs: TurnInputs, question: str, draft: str, report: Any, passages: list[Passage],
            language: str) -> str:
    if inputs.llm is not None:
        messages = grounding.refine_messages(question, draft, report.critique(), passages,
                                             patient_summary=inputs.patient_summary)
        try:
            return grounding.strip_thinking(inputs.llm.chat(messages).text)
        except Exception:  # a failed refine leaves the draft unsafe; the loop then blocks it
            return ""
    if any(f.severity == "critical" and f.rule != "missed_emergency" for f in report.findings):
        return ""  # a drug this patient must not take: leaving words out cannot make the advice safe
    revised = grounding.remove_spans(draft, [f.span for f in report.findings])
    if any(f.rule == "missed_emergency" for f in report.findings):
        revised = f"{revised} {grounding.line('blocked_advice', language)}".strip()
    return revised


def _retrieve(inputs: TurnInputs, queries: list[str]) -> EvidenceSet:
    if inputs.kb is None:
        return EvidenceSet([], 0.0, inputs.min_relevance)
    return gather(inputs.kb, queries, k=inputs.k, min_relevance=inputs.min_relevance,
                  min_similarity=inputs.min_similarity)


def _chat_answer(inputs: TurnInputs, question: str, language: str) -> str:
    if inputs.llm is None:
        return ("你好！我是医疗助手，可以回答健康、症状、药物和检查方面的问题。" if language == "zh" else
                "Hello! I am a medical assistant: ask me about symptoms, medicines, tests or treatments.")
    messages = [*inputs.history, {"role": "user", "content": question}]
    return grounding.strip_thinking(inputs.llm.chat(messages).text)


def _usage(inputs: TurnInputs) -> dict[str, Any]:
    """Token counts of the last model call that wrote answer text (draft, refine or chit-chat
    reply), for the chat views' status line; nothing when no model wrote any."""
    result = getattr(inputs.llm, "last_result", None)
    if result is None:
        return {}
    return {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "finish_reason": result.finish_reason}


def _touches_medicine(question: str, answer: str) -> bool:
    """Does a chit-chat reply name a medicine or trip a safety rule (then it gets the disclaimer)?"""
    from localqwen_medical.rules import drug_table, recommended, run_rules

    return bool(recommended(drug_table(), answer) or run_rules(AuditCase(question, answer)))


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS - 1] + "…"


def _check_cancel(inputs: TurnInputs) -> None:
    if inputs.cancel is not None:
        inputs.cancel.raise_if_cancelled()
