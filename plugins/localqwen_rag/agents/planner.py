"""Planner: 3-5 steps and whether the knowledge base is needed.

The model is asked for JSON ``{"steps": [...], "needs_kb": true}``. Fallback (reply unparseable,
or not 3-5 usable steps): a deterministic plan built from the question; ``needs_kb`` is then true
whenever a non-empty knowledge base is switched on and the message isn't small talk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from localqwen_rag.agents.llm import LLM
from localqwen_rag.agents.parsing import boolean, find_json_object, strings

SYSTEM = ("You are the Planner of a team answering questions over the user's documents. Reply with JSON only: "
          '{"steps": ["3 to 5 short steps"], "needs_kb": true or false} where needs_kb says whether the '
          "answer needs the knowledge base.")
_SMALL_TALK = re.compile(r"(?i)^\s*(hi|hello|hey|thanks?|thank you|good (morning|evening)|你好|谢谢|再见|bye)\b[\s!.?。！]*$")


@dataclass
class Plan:
    steps: list[str]
    needs_kb: bool
    source: str  # "model" or "fallback: <why>"
    raw: str = ""
    subquestions: list[str] = field(default_factory=list)


def is_small_talk(message: str) -> bool:
    """Greetings and thanks: answered without the documents (never refused as off-topic)."""
    return bool(_SMALL_TALK.match(message))


def subquestions(question: str) -> list[str]:
    """Parts of a compound question ("compare A and B", "X? Y?") to look up one by one."""
    parts = [p.strip() for p in re.split(r"[?？]\s+|;\s*|\n+", question) if len(p.strip()) > 3]
    match = re.search(r"(?i)(?:compare|difference between|versus|对比|比较)\s+(.+?)\s+(?:and|with|vs\.?|versus|和|与)\s+(.+?)[?？.]?$",
                      question)
    if match:
        parts = [match.group(1).strip(), match.group(2).strip()]
    return parts[:4] if len(parts) > 1 else [question.strip()]


def fallback_plan(question: str, kb_available: bool, why: str) -> Plan:
    needs_kb = kb_available and not _SMALL_TALK.match(question)
    parts = subquestions(question)
    steps = [f"Understand what is asked: {question.strip()[:120]}"]
    if needs_kb:
        steps += [f"Find evidence in the knowledge base about: {p[:80]}" for p in parts[:2]]
    else:
        steps.append("Answer from general knowledge (the knowledge base is not needed or switched off)")
    steps.append("Write the answer" + (", citing evidence as [n]" if needs_kb else ""))
    steps.append("Check the answer addresses the question" + (" and its citations" if needs_kb else ""))
    return Plan(steps[:5], needs_kb, f"fallback: {why}", subquestions=parts)


def plan(llm: LLM | None, question: str, *, kb_available: bool) -> Plan:
    if llm is None:
        return fallback_plan(question, kb_available, "no model")
    raw = llm.complete(SYSTEM, question, max_new_tokens=160)
    data = find_json_object(raw)
    if data is None:
        result = fallback_plan(question, kb_available, "reply was not JSON")
    else:
        steps = strings(data.get("steps"), limit=5)
        needs_kb = boolean(data.get("needs_kb"))
        if len(steps) < 3 or needs_kb is None:
            result = fallback_plan(question, kb_available, "JSON lacked 3-5 steps or needs_kb")
        else:
            result = Plan(steps, needs_kb and kb_available, "model", subquestions=subquestions(question))
    result.raw = raw
    return result
