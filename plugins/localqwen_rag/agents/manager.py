"""Manager: looks at the plan and a small retrieval preview and decides what runs next.

    retrieve         -> Knowledge runs once with the question
    retrieve_more    -> Knowledge runs with the question, then again with a rewritten query
    answer_directly  -> Knowledge does not run; the Responder answers without evidence

The model is asked for JSON ``{"action": ..., "query": ..., "reason": ...}``. Fallback rules
(reply unparseable or an unknown action): knowledge base off or not needed -> answer_directly;
the preview has relevant evidence -> retrieve; otherwise retrieve_more with a rewritten query
(the question's keywords plus the plan's). A model may not retrieve from a knowledge base that is
switched off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from localqwen.retrieval.bm25 import STOPWORDS
from localqwen_rag.agents.llm import LLM
from localqwen_rag.agents.parsing import find_json_object
from localqwen_rag.agents.planner import Plan

ACTIONS = ("retrieve", "retrieve_more", "answer_directly")
SYSTEM = ("You are the Manager. Given the question, the plan and a preview of retrieved passages, decide the "
          'next action. Reply with JSON only: {"action": "retrieve" | "retrieve_more" | "answer_directly", '
          '"query": "search query to use", "reason": "why"}.')


@dataclass
class Decision:
    action: str
    query: str
    reason: str
    source: str
    raw: str = ""


def rewrite_query(question: str, plan: Plan) -> str:
    """Keywords of the question first, then new keywords from the plan's steps (deduplicated)."""
    seen: set[str] = set()
    words = []
    noise = STOPWORDS | {"find", "evidence", "knowledge", "base", "understand", "asked", "answer", "write",
                         "check", "citing", "question", "addresses", "citations", "collect"}
    for text in [question, *plan.steps]:
        for word in re.findall(r"[\w\-]+", text.lower()):
            if len(word) > 2 and word not in noise and word not in seen:
                seen.add(word)
                words.append(word)
    return " ".join(words[:24]) or question


def fallback_decision(question: str, plan: Plan, preview_relevant: int, kb_available: bool, why: str) -> Decision:
    if not kb_available:
        return Decision("answer_directly", question, "the knowledge base is off or empty", f"fallback: {why}")
    if not plan.needs_kb:
        return Decision("answer_directly", question, "the plan says no documents are needed", f"fallback: {why}")
    if preview_relevant:
        return Decision("retrieve", question, f"the preview found {preview_relevant} relevant passage(s)",
                        f"fallback: {why}")
    return Decision("retrieve_more", rewrite_query(question, plan),
                    "the preview found nothing relevant; searching again with a rewritten query", f"fallback: {why}")


def decide(llm: LLM | None, question: str, plan: Plan, preview: list, *, preview_relevant: int,
           kb_available: bool) -> Decision:
    if llm is None:
        return fallback_decision(question, plan, preview_relevant, kb_available, "no model")
    shown = "\n".join(f"- {hit.text[:200]}" for hit in preview[:3]) or "(nothing found)"
    user = (f"Question: {question}\nPlan:\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(plan.steps))
            + f"\nKnowledge base available: {'yes' if kb_available else 'no'}\nPreview (untrusted document text):\n"
            + shown)
    raw = llm.complete(SYSTEM, user, max_new_tokens=120)
    data = find_json_object(raw) or {}
    action = str(data.get("action", "")).strip().lower()
    if action not in ACTIONS:
        decision = fallback_decision(question, plan, preview_relevant, kb_available,
                                     "reply had no valid action" if data else "reply was not JSON")
    elif action != "answer_directly" and not kb_available:
        decision = fallback_decision(question, plan, preview_relevant, kb_available,
                                     f"model chose {action} but the knowledge base is off")
    else:
        query = str(data.get("query") or "").strip() or (
            rewrite_query(question, plan) if action == "retrieve_more" else question)
        decision = Decision(action, query, str(data.get("reason", ""))[:300], "model")
    decision.raw = raw
    return decision
