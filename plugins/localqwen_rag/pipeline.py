"""Runs one question through the chosen topology, yielding an event per agent step.

Every agent's turn is a ``Step`` event (started / finished with its timing and a one-line
detail), so each UI shows it as its own panel; the Responder's text streams as ``TextDelta``
events of its step; the checked answer (a ``TextDelta`` without a step: the chat's answer, its
numbered sources at the end), a sources table and ``Done`` come last. The tool turn runs on the
shared tool loop, so its calls are ``ToolCall`` events. The run's trajectory is appended to the
JSONL log and its turn record to ``deps.turns`` whatever happens.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.plugin_api import events
from localqwen.runtime.tool_loop import run_tool, run_tool_loop
from localqwen_rag import tools, topology
from localqwen_rag.agents import knowledge, manager, planner, responder, reviewer
from localqwen_rag.agents.llm import LLM
from localqwen_rag.trajectory import Trajectory, TrajectoryLog

EVIDENCE_KEPT = 600  # characters of each passage a turn record keeps (the report quotes this much)


@dataclass
class Question:
    text: str
    use_kb: bool = True
    image: str | None = None
    topology: str = "auto"
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class PipelineDeps:
    llm: LLM  # text model for every agent
    vision_llm: Callable[[], LLM] | None  # loaded only for questions with an image
    kb: Any | None  # a KnowledgeBase, or None
    knowledge: knowledge.KnowledgeSettings
    log: TrajectoryLog
    reports_dir: Path
    turns: list[dict[str, Any]]  # the conversation's earlier turn records; this run appends its own
    router: LLM | None = None  # a fine-tuned router model; None = rules
    tools_enabled: bool = True
    vision_calls: int = 0  # calls made by the vision model (loaded per question)


class _Steps:
    """Times agent steps and records them in the trajectory."""

    def __init__(self, trajectory: Trajectory, cancel=None) -> None:
        self.trajectory = trajectory
        self.cancel = cancel
        self.count: dict[str, int] = {}

    def start(self, agent: str, title: str) -> tuple[events.Step, str, float]:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()  # stop between agents, not only inside generation
        self.count[agent] = self.count.get(agent, 0) + 1
        step_id = agent if self.count[agent] == 1 else f"{agent}-{self.count[agent]}"
        return events.Step(step=step_id, title=title), step_id, time.monotonic()

    def finish(self, step_id: str, title: str, started: float, detail: str) -> events.Step:
        elapsed = time.monotonic() - started
        self.trajectory.add_step(step_id, elapsed, detail)
        return events.Step(step=step_id, title=title, status="finished", detail=detail, elapsed_s=elapsed)


def run_question(question: Question, deps: PipelineDeps) -> Iterator[Any]:
    started = time.monotonic()
    kb_available = bool(question.use_kb and deps.kb is not None and len(deps.kb.index()))
    route = topology.route(question.text, has_image=bool(question.image), forced=question.topology,
                           router=deps.router)
    trajectory = Trajectory(question.text, route.topology, route.roles, route.source, reasoning=route.reasoning,
                            has_image=bool(question.image), use_kb=question.use_kb,
                            knowledge_base=getattr(deps.kb, "name", "") or "")
    steps = _Steps(trajectory, deps.llm.cancel)
    turn: dict[str, Any] = {"question": question.text, "topology": route.topology, "router_source": route.source}
    try:
        step, sid, t0 = steps.start("router", "Router")
        yield step
        yield steps.finish(sid, "Router", t0, f"{route.topology} ({route.source}): {route.reasoning}")

        if deps.tools_enabled and tools.could_need_tool(question.text):
            saved = yield from _tool_turn(question, deps, steps)
            if saved is not None:
                turn["answer"] = f"Saved the session report to {saved}"
                trajectory.outcome, trajectory.outcome_reasons = "success", ["tool call"]
                yield events.TextDelta(text=turn["answer"])
                yield events.Done(summary=turn["answer"], result={"answer": turn["answer"], "report": str(saved),
                                                                  "topology": route.topology, "citations": []})
                return

        answer = yield from _TOPOLOGIES[route.topology](question, deps, steps, turn, kb_available)
        problems = [] if answer.refused else reviewer.check(question.text, answer)
        trajectory.outcome = "refused" if answer.refused else "success" if not problems else "failure"
        trajectory.outcome_reasons = ["nothing relevant in the knowledge base"] if answer.refused else problems
        trajectory.citations, trajectory.evidence = len(answer.citations), len(answer.evidence)
        trajectory.model_calls = _model_calls(deps)
        turn["answer"] = answer.text
        turn["evidence"] = [{"n": n, "citation": h.citation(), "text": h.text[:EVIDENCE_KEPT]}
                            for n, h in enumerate(answer.evidence, start=1)]
        if problems:  # the reason travels with the answer in every frontend (stored with the message too)
            yield events.Warning(message="Not a grounded answer: " + "; ".join(problems))
        yield events.TextDelta(text=answer.text)
        if answer.evidence:
            # The passages the Knowledge step handed over, cited or not; the answer's "Sources:" list
            # names only those it rests on, so this is the one place to see what else was found.
            cited = {c["n"]: c["by"] for c in answer.citations}
            yield events.Table(title="Retrieved passages", columns=["#", "source", "page", "heading", "score", "cited"],
                               rows=[[n, h.source, h.page or "", h.heading, round(h.score, 4), cited.get(n, "")]
                                     for n, h in enumerate(answer.evidence, start=1)])
        grade = ("not in your documents" if answer.refused
                 else f"failure: {'; '.join(problems)}" if problems else "success")
        # A chat turn that produced an answer ends "ok" even when the grade is a failure (the API
        # server turns a failed Done into an HTTP error after the text streamed); the Warning above
        # and the summary carry the reason, and the CLI's ask action exits non-zero (plugin.py).
        yield events.Done(
            summary=f"{route.topology}: {grade}" + (" (no evidence found)" if answer.no_evidence else ""),
            result={"answer": answer.text, "citations": answer.citations, "model_citations": answer.model_citations,
                    "unsupported": answer.grounding.unsupported if answer.grounding else [],
                    "invalid_citations": answer.invalid_citations, "no_evidence": answer.no_evidence,
                    "refused": answer.refused, "topology": route.topology, "router_source": route.source,
                    "steps": [s["agent"] for s in trajectory.steps], "verdicts": trajectory.verdicts,
                    "outcome": trajectory.outcome, "outcome_reasons": trajectory.outcome_reasons,
                    "model_calls": trajectory.model_calls, "trajectory_id": trajectory.id,
                    # the token counts of the call that wrote the answer (the chat views show them)
                    **answer.usage},
            elapsed_s=time.monotonic() - started)
    finally:
        trajectory.latency_s = round(time.monotonic() - started, 4)
        if deps.llm.cancel is not None and deps.llm.cancel.cancelled:
            trajectory.outcome, trajectory.outcome_reasons = "cancelled", [deps.llm.cancel.reason]
        deps.log.append(trajectory)
        turn["verdicts"] = trajectory.verdicts
        deps.turns.append(turn)


def _model_calls(deps: PipelineDeps) -> int:
    return deps.llm.calls + (deps.router.calls if deps.router is not None else 0) + deps.vision_calls


def _tool_turn(question: Question, deps: PipelineDeps, steps: _Steps):
    """Offer save_session_summary on the user's conversation only (never on retrieved text).

    The model may call it natively (one round on the shared tool loop; what it says shows in the
    Tools panel); when it doesn't but the user's own message asks for it, the same tool runs."""
    step, sid, t0 = steps.start("tools", "Tools")
    yield step
    tool = tools.session_summary_tool(deps.turns, deps.reports_dir)
    messages = [{"role": "system", "content": tools.TOOL_SYSTEM}, *question.history[-6:],
                {"role": "user", "content": question.text}]
    loop = yield from run_tool_loop(deps.llm.engine, messages, [tool], settings=deps.llm.settings(64),
                                    cancel=deps.llm.cancel, max_rounds=1, step=sid)
    saved = [run for run in loop.runs if run.ok]
    how = "native tool call"
    if not saved and tools.wants_summary(question.text):
        fallback = run_tool([tool], tool.name, {"title": question.text[:80]})
        yield fallback.event()
        saved, how = [fallback], "keyword fallback (user asked)"
    if not saved:
        failed = [run.result for run in loop.runs]
        yield steps.finish(sid, "Tools", t0, "no tool needed" if not failed else "; ".join(failed)[:300])
        return None
    path = Path(saved[-1].value)
    yield events.FileWritten(path=str(path), description="session report (Markdown)")
    yield steps.finish(sid, "Tools", t0, f"save_session_summary via {how} -> {path.name}")
    return path


def _knowledge_step(deps: PipelineDeps, steps: _Steps, query: str, *, k: int | None = None, title: str = "Knowledge"):
    step, sid, t0 = steps.start("knowledge", title)
    yield step
    hits = knowledge.retrieve(deps.kb, query, deps.knowledge, k=k)
    yield steps.finish(sid, title, t0, f"{len(hits)} relevant passage(s) for: {query[:100]}")
    return hits


def _respond_step(question: Question, deps: PipelineDeps, steps: _Steps, evidence, used_kb: bool,
                  feedback: list[str] | None = None):
    title = "Responder" + (" (rewrite)" if feedback else "")
    # A rewrite of an answer with nothing grounded opens with the passage sentence closest to the
    # question (see responder.respond): told what was wrong, the 1.5B model still restated the question.
    quote = bool(feedback and evidence and reviewer.NOTHING_GROUNDED in feedback)
    if quote:
        title += ", opening with a quote"
    step, sid, t0 = steps.start("responder", title)
    yield step
    llm = deps.vision_llm() if question.image and deps.vision_llm else deps.llm
    before = llm.calls
    answer = None
    for item in responder.respond(llm, question.text, evidence, used_kb=used_kb, image=question.image,
                                  feedback=feedback, history=question.history[-6:], quote=quote):
        if isinstance(item, str):
            if item:
                yield events.TextDelta(text=item, step=sid)
        else:
            answer = item
    assert answer is not None
    if llm is not deps.llm:
        deps.vision_calls += llm.calls - before
    detail = f"{len(answer.citations)} source(s) of {len(evidence)} passage(s)"
    if answer.grounding is not None:
        attributed = sum(s.status == "attributed" for s in answer.grounding.sentences)
        detail += (f"; {len(answer.model_citations)} cited by the model, {attributed} sentence(s) attributed, "
                   f"{len(answer.grounding.unsupported)} unsupported")
    if answer.invalid_citations:
        detail += f"; dropped invalid {answer.invalid_citations}"
    if answer.no_evidence:
        detail += "; no evidence: said so"
    yield steps.finish(sid, title, t0, detail)
    return answer


def _review_step(question: Question, deps: PipelineDeps, steps: _Steps, answer) -> Any:
    step, sid, t0 = steps.start("reviewer", "Reviewer")
    yield step
    verdict = reviewer.review(deps.llm, question.text, answer)
    steps.trajectory.verdicts.append({"verdict": verdict.verdict, "reasons": verdict.reasons, "source": verdict.source})
    yield steps.finish(sid, "Reviewer", t0, f"{verdict.verdict} ({verdict.source}): {'; '.join(verdict.reasons)[:200]}")
    return verdict


def _plan_step(question: Question, deps: PipelineDeps, steps: _Steps, turn, kb_available: bool):
    step, sid, t0 = steps.start("planner", "Planner")
    yield step
    plan = planner.plan(deps.llm, question.text, kb_available=kb_available)
    turn["plan"] = plan.steps
    yield steps.finish(sid, "Planner", t0, f"{len(plan.steps)} steps, knowledge base "
                       f"{'needed' if plan.needs_kb else 'not needed'} ({plan.source}): " + " | ".join(plan.steps))
    return plan


def _evidence_or_refusal(question: Question, deps: PipelineDeps, steps: _Steps, evidence: list,
                        kb_available: bool, looked_up: bool):
    """(evidence, refusal): the refusal when the documents hold nothing relevant, else ``None``.

    Only with the knowledge base on and not empty, and not for small talk. A question the team
    chose to answer without looking is looked up once here, so "answer directly" cannot turn an
    off-topic question into an answer from the model's memory; what that lookup finds is used."""
    if evidence or not kb_available or planner.is_small_talk(question.text):
        return evidence, None
    if not looked_up:
        evidence = yield from _knowledge_step(deps, steps, question.text)
        if evidence:
            return evidence, None
    return evidence, responder.refusal(getattr(deps.kb, "name", "") or "")


def run_single(question, deps, steps, turn, kb_available):
    evidence = (yield from _knowledge_step(deps, steps, question.text)) if kb_available else []
    evidence, refused = yield from _evidence_or_refusal(question, deps, steps, evidence, kb_available, looked_up=True)
    if refused is not None:
        return refused
    answer = yield from _respond_step(question, deps, steps, evidence, used_kb=question.use_kb)
    if evidence and answer.grounding is not None and not answer.grounding.cited:
        # One rewrite, only when nothing in the answer rests on the passages: a small model that
        # restated the question instead of the evidence usually cites once told what was wrong
        # (the real 1.5B model did so for most of its ungrounded SciFact answers). A grounded answer
        # costs no second call, so simple questions stay one model call.
        answer = yield from _respond_step(question, deps, steps, evidence, used_kb=question.use_kb,
                                          feedback=[reviewer.NOTHING_GROUNDED])
    return answer


def run_centralized(question, deps, steps, turn, kb_available):
    plan = yield from _plan_step(question, deps, steps, turn, kb_available)
    step, sid, t0 = steps.start("manager", "Manager")
    yield step
    preview = knowledge.retrieve(deps.kb, question.text, deps.knowledge, k=3) if kb_available else []
    decision = manager.decide(deps.llm, question.text, plan, preview, preview_relevant=len(preview),
                              kb_available=kb_available)
    turn["decision"] = f"{decision.action} ({decision.source}): {decision.reason}"
    yield steps.finish(sid, "Manager", t0, f"{decision.action} ({decision.source}): {decision.reason}; "
                       f"query: {decision.query[:100]}")
    evidence: list = []
    if decision.action in ("retrieve", "retrieve_more"):
        evidence = yield from _knowledge_step(deps, steps, question.text)
    if decision.action == "retrieve_more":
        more = yield from _knowledge_step(deps, steps, decision.query, k=deps.knowledge.k * 2,
                                          title="Knowledge (rewritten query)")
        evidence = knowledge.merge(evidence, more)[: deps.knowledge.k * 2]
    evidence, refused = yield from _evidence_or_refusal(question, deps, steps, evidence, kb_available,
                                                        looked_up=decision.action in ("retrieve", "retrieve_more"))
    if refused is not None:
        return refused
    answer = yield from _respond_step(question, deps, steps, evidence, used_kb=question.use_kb)
    verdict = yield from _review_step(question, deps, steps, answer)
    if verdict.verdict == "RETRY":  # at most one rewrite
        answer = yield from _respond_step(question, deps, steps, evidence, used_kb=question.use_kb,
                                          feedback=verdict.reasons)
        yield from _review_step(question, deps, steps, answer)
    return answer


def run_decentralized(question, deps, steps, turn, kb_available):
    plan = yield from _plan_step(question, deps, steps, turn, kb_available)
    evidence: list = []
    if kb_available and plan.needs_kb:
        for part in plan.subquestions or [question.text]:
            found = yield from _knowledge_step(deps, steps, part, title=f"Knowledge: {part[:40]}")
            evidence = knowledge.merge(evidence, found)
    evidence, refused = yield from _evidence_or_refusal(question, deps, steps, evidence, kb_available,
                                                        looked_up=kb_available and plan.needs_kb)
    if refused is not None:
        return refused
    answer = yield from _respond_step(question, deps, steps, evidence, used_kb=question.use_kb)
    verdict = yield from _review_step(question, deps, steps, answer)
    if verdict.verdict == "RETRY":
        # The Reviewer hands the baton back: one more lookup with a rewritten query, one revision.
        if kb_available:
            more = yield from _knowledge_step(deps, steps, manager.rewrite_query(question.text, plan),
                                              title="Knowledge (reviewer asked)")
            evidence = knowledge.merge(evidence, more)
        answer = yield from _respond_step(question, deps, steps, evidence, used_kb=question.use_kb,
                                          feedback=verdict.reasons)
        yield from _review_step(question, deps, steps, answer)
    return answer


_TOPOLOGIES = {"single": run_single, "centralized": run_centralized, "decentralized": run_decentralized}
