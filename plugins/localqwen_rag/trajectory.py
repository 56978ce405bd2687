"""Trajectory logs (one JSON line per run) and their conversion into router training data.

A record: id, time, query, has_image, use_kb, knowledge base, topology, roles, router source,
steps (agent, seconds, detail), verdicts, latency, model calls, outcome (``success`` / ``failure`` /
``refused``: nothing relevant in the documents) and why.
``export_router_data`` writes:
- SFT rows (query -> JSON plan) from successful runs, in the chat format of CONTRACTS.md;
- DPO rows preferring the simplest topology that succeeded for a query over a more complex or a
  failed one ("as simple as possible while it still works", seed 001).
"""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_open
from localqwen_rag.topology import COMPLEXITY, ROLES, ROUTER_SYSTEM, Route


@dataclass
class Trajectory:
    query: str
    topology: str
    roles: list[str]
    router_source: str
    reasoning: str = ""
    has_image: bool = False
    use_kb: bool = False
    knowledge_base: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    time: float = field(default_factory=time.time)
    steps: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    latency_s: float = 0.0
    outcome: str = "failure"
    outcome_reasons: list[str] = field(default_factory=list)
    citations: int = 0
    evidence: int = 0
    model_calls: int = 0

    def add_step(self, agent: str, elapsed_s: float, detail: str) -> None:
        self.steps.append({"agent": agent, "elapsed_s": round(elapsed_s, 4), "detail": detail[:500]})


class TrajectoryLog:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    @property
    def path(self) -> Path:
        return self.folder / f"trajectories-{time.strftime('%Y-%m')}.jsonl"

    def append(self, trajectory: Trajectory) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        # One write() of one line in append mode: concurrent runs never interleave inside a record.
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(asdict(trajectory), ensure_ascii=False) + "\n")
        return self.path

    def read(self) -> list[dict[str, Any]]:
        records = []
        for file in sorted(self.folder.glob("trajectories-*.jsonl")):
            for line in file.read_text(encoding="utf-8").splitlines():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut by a crash; the rest of the log is still good
        return records


def _prompt(query: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": ROUTER_SYSTEM}, {"role": "user", "content": query}]


def _plan(record: dict[str, Any]) -> str:
    topology = record["topology"]
    return Route(topology, record.get("roles") or ROLES[topology], record.get("reasoning", ""), "").plan_json()


def export_router_data(records: list[dict[str, Any]], out_dir: Path) -> dict[str, Any]:
    """Write router_sft.jsonl and router_dpo.jsonl; return their paths and row counts."""
    by_query: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("topology") in COMPLEXITY and record.get("query", "").strip():
            by_query[" ".join(record["query"].lower().split())].append(record)
    sft, dpo = [], []
    for runs in by_query.values():
        wins = sorted((r for r in runs if r.get("outcome") == "success"),
                      key=lambda r: (COMPLEXITY[r["topology"]], r.get("latency_s", 0)))
        if not wins:
            continue
        best = wins[0]
        query = best["query"]
        sft.append({"messages": [*_prompt(query), {"role": "assistant", "content": _plan(best)}]})
        seen_rejected = set()
        for other in runs:
            worse = other.get("outcome") != "success" or COMPLEXITY[other["topology"]] > COMPLEXITY[best["topology"]]
            if worse and other["topology"] != best["topology"] and other["topology"] not in seen_rejected:
                seen_rejected.add(other["topology"])
                dpo.append({"prompt": _prompt(query),
                            "chosen": [{"role": "assistant", "content": _plan(best)}],
                            "rejected": [{"role": "assistant", "content": _plan(other)}]})
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, rows in (("router_sft.jsonl", sft), ("router_dpo.jsonl", dpo)):
        with atomic_open(out_dir / name) as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        paths[name] = str(out_dir / name)
    return {"sft": paths["router_sft.jsonl"], "dpo": paths["router_dpo.jsonl"], "sft_rows": len(sft),
            "dpo_rows": len(dpo), "trajectories": len(records)}
