"""Reviewer: a PASS / RETRY verdict with reasons.

The model is asked for ``VERDICT: PASS|RETRY`` plus reasons (JSON accepted too; see
parsing.parse_verdict). Fallback when the reply has no verdict: deterministic checks: the answer
is not empty, is not a copy of the question, and, when evidence was given, cites at least one
piece of it. The same checks decide a run's recorded outcome, so topologies compare fairly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from localqwen_rag.agents.llm import LLM
from localqwen_rag.agents.parsing import parse_verdict
from localqwen_rag.agents.responder import Answer, evidence_block

SYSTEM = ("You are the Reviewer. Check whether the answer addresses the question and is supported by the "
          "evidence it cites. Reply exactly:\nVERDICT: PASS or VERDICT: RETRY\nREASONS:\n- reason")


@dataclass
class Verdict:
    verdict: str  # PASS | RETRY
    reasons: list[str] = field(default_factory=list)
    source: str = "model"
    raw: str = ""


def check(question: str, answer: Answer) -> list[str]:
    """Problems found without a model (empty list = fine)."""
    problems = []
    body = answer.body.strip()
    if len(re.findall(r"\w", body)) < 3:
        problems.append("the answer is empty")
    elif body.lower().strip(" ?.!") == question.lower().strip(" ?.!"):
        problems.append("the answer only repeats the question")
    if answer.evidence and not answer.citations:
        problems.append("the answer cites none of the evidence; cite it by number, e.g. [1]")
    if answer.invalid_citations:
        problems.append(f"citations {answer.invalid_citations} match no evidence")
    return problems


def review(llm: LLM | None, question: str, answer: Answer) -> Verdict:
    problems = check(question, answer)
    fallback = Verdict("RETRY" if problems else "PASS", problems or ["answer present and citations check out"])
    if llm is None:
        fallback.source = "fallback: no model"
        return fallback
    user = (f"Question: {question}\n\nEvidence:\n{evidence_block(answer.evidence) or '(none)'}\n\n"
            f"Answer:\n{answer.body}")
    raw = llm.complete(SYSTEM, user, max_new_tokens=96)
    parsed = parse_verdict(raw)
    if parsed is None:
        fallback.source = "fallback: reply had no PASS/RETRY verdict"
        fallback.raw = raw
        return fallback
    verdict, reasons = parsed
    return Verdict(verdict, reasons or ["(no reasons given)"], "model", raw)
