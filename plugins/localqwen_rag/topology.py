"""The meta-router: which team shape answers this query.

    single         one Responder (with retrieval when the knowledge base is on)
    centralized    Planner -> Manager -> Knowledge (as decided) -> Responder -> Reviewer
    decentralized  agents in turn, no manager: Planner splits the question, Knowledge looks up each
                   part, Responder drafts, Reviewer hands back for one revision when needed

Cold start is rules (seed 001): comparisons go decentralized, multi-part or long questions go
centralized, the rest single. A fine-tuned router model can replace the rules: it reads the query
and writes ``{"topology": ..., "roles": [...], "reasoning": ...}`` (the shape of the SFT data that
``export-router-data`` writes); an unusable reply falls back to the rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from localqwen_rag.agents.parsing import find_json_object, strings

if TYPE_CHECKING:
    from localqwen_rag.agents.llm import LLM

TOPOLOGIES = ("single", "centralized", "decentralized")
ROLES = {
    "single": ["Responder"],
    "centralized": ["Planner", "Manager", "Knowledge", "Responder", "Reviewer"],
    "decentralized": ["Planner", "Knowledge", "Responder", "Reviewer"],
}
# Cheapest first: the DPO export prefers the simplest topology that succeeded.
COMPLEXITY = {"single": 0, "decentralized": 1, "centralized": 2}
ROUTER_SYSTEM = ("You are a meta-router. Choose the best multi-agent topology (single / centralized / "
                 "decentralized) for the user's request and assign roles. Reply with JSON only.")

_COMPARE = re.compile(r"(?i)\b(compare|comparison|versus|vs\.?|difference between|differences|pros and cons)\b|对比|比较|区别")
_MULTI = re.compile(r"(?i)\b(and then|step by step|first\b.*\bthen|explain .* and .*|list .* and)\b|并且|然后|分别")


@dataclass
class Route:
    topology: str
    roles: list[str]
    reasoning: str
    source: str  # "rules", "forced" or "model"
    raw: str = ""
    extra: dict = field(default_factory=dict)

    def plan_json(self) -> str:
        """The router's answer as the SFT target text."""
        return json.dumps({"topology": self.topology, "roles": self.roles, "reasoning": self.reasoning},
                          ensure_ascii=False)


def route_by_rules(query: str, *, has_image: bool = False) -> Route:
    words = len(query.split())
    if _COMPARE.search(query):
        return Route("decentralized", ROLES["decentralized"], "a comparison: look up each side in turn", "rules")
    if query.count("?") + query.count("？") > 1 or _MULTI.search(query) or words > 40:
        return Route("centralized", ROLES["centralized"], "several parts: a manager coordinates the workers", "rules")
    reason = "a simple question" + (" about an image" if has_image else "") + ": one agent is enough"
    return Route("single", ROLES["single"], reason, "rules")


def route(query: str, *, has_image: bool = False, forced: str | None = None, router: LLM | None = None) -> Route:
    if forced and forced != "auto":
        if forced not in TOPOLOGIES:
            raise ValueError(f"unknown topology '{forced}' (choose from {', '.join(TOPOLOGIES)} or auto)")
        return Route(forced, ROLES[forced], "chosen by the user", "forced")
    if router is None:
        return route_by_rules(query, has_image=has_image)
    raw = router.complete(ROUTER_SYSTEM, query, max_new_tokens=96)
    data = find_json_object(raw) or {}
    topology = str(data.get("topology", "")).strip().lower()
    if topology not in TOPOLOGIES:
        fallback = route_by_rules(query, has_image=has_image)
        fallback.source = "rules (router reply unusable)"
        fallback.raw = raw
        return fallback
    return Route(topology, strings(data.get("roles"), limit=8) or ROLES[topology],
                 str(data.get("reasoning", ""))[:300], "model", raw)
