"""Reviewer: a PASS / RETRY verdict with reasons.

Deterministic checks run first: the answer is not empty, is not a copy of the question, and,
when evidence was given, rests on it (some sentence cited or attributable, at most half of them
unsupported), does not say the opposite of the passage it draws on and quotes only what the
passages say (see ``grounding``). When they find a problem the verdict is RETRY with that
reason, whatever a model would say: a small model passes answers that contradict their own quote.
Otherwise the model is asked for ``VERDICT: PASS|RETRY`` plus reasons (JSON accepted too; see
parsing.parse_verdict), with the checks' PASS as fallback. The same checks decide a run's
recorded outcome, so topologies compare fairly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from localqwen_rag.agents.llm import LLM
from localqwen_rag.agents.parsing import parse_verdict
from localqwen_rag.agents.responder import Answer, evidence_block

SYSTEM = ("You are the Reviewer. Check whether the answer addresses the question and is supported by the "
          "evidence it cites. Reply exactly:\nVERDICT: PASS or VERDICT: RETRY\nREASONS:\n- reason")


NOTHING_GROUNDED = ("no sentence of the answer is supported by the retrieved passages (none cited, none "
                    "attributable); cite the passage each sentence uses, e.g. [1]")

# A rewrite the app opened with a passage's sentence, whose own sentences still rest on nothing: the
# quote is evidence shown to the user, not an answer the model grounded.
ONLY_THE_QUOTE = "only the quoted passage sentence is supported; the answer's own sentences are not"


@dataclass
class Verdict:
    verdict: str  # PASS | RETRY
    reasons: list[str] = field(default_factory=list)
    source: str = "model"
    raw: str = ""


def check(question: str, answer: Answer) -> list[str]:
    """Problems found without a model (empty list = fine); each names what is wrong."""
    problems = []
    body = answer.body.strip()
    if len(re.findall(r"\w", body)) < 3:
        problems.append("the answer is empty")
    elif body.lower().strip(" ?.!") == question.lower().strip(" ?.!"):
        problems.append("the answer only repeats the question")
    checked = answer.grounding
    if answer.evidence and checked is not None and body:
        if not checked.cited:
            problems.append(NOTHING_GROUNDED)
        elif not checked.own_grounded:
            problems.append(ONLY_THE_QUOTE)
        elif len(checked.unsupported) * 2 > checked.judged:
            problems.append(f"{len(checked.unsupported)} of {checked.judged} sentences are not supported by the "
                            f"sources, e.g. \"{checked.unsupported[0][:90]}\"")
        problems += checked.contradictions + checked.quote_problems
    if answer.invalid_citations:
        problems.append(f"citations {answer.invalid_citations} match no evidence")
    return problems


def review(llm: LLM | None, question: str, answer: Answer) -> Verdict:
    """The deterministic checks first: what they find (a contradiction with the quoted source, a
    made-up quote, nothing grounded) is a RETRY the model cannot overrule; a model PASS only counts
    on an answer that passed them. A model RETRY on a clean answer is kept (it may see more)."""
    problems = check(question, answer)
    fallback = Verdict("RETRY" if problems else "PASS", problems or ["answer present and grounded in the sources"])
    if llm is None:
        fallback.source = "fallback: no model"
        return fallback
    if problems:
        fallback.source = "checks (the model is not asked when they fail)"
        return fallback
    user = (f"Question: {question}\n\nEvidence:\n{evidence_block(answer.evidence, question) or '(none)'}\n\n"
            f"Answer:\n{answer.body}")
    raw = llm.complete(SYSTEM, user, max_new_tokens=96)
    parsed = parse_verdict(raw)
    if parsed is None:
        fallback.source = "fallback: reply had no PASS/RETRY verdict"
        fallback.raw = raw
        return fallback
    verdict, reasons = parsed
    return Verdict(verdict, reasons or ["(no reasons given)"], "model", raw)
