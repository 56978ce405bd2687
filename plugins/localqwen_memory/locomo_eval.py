"""``evaluate --suite locomo``: judge-free evidence recall on LoCoMo (locomo10.json).

Each conversation's turns go into a throw-away memory store (one persona per conversation) as
raw turns, each indexed with its context: speaker, session date and the neighbouring turns. For
every QA of categories 1-4, a hit means all its evidence turns ("D1:3") are among the top 10
(``all_at_10``), and at session level all evidence sessions among the top 5 sessions
(``session_all_at_5``, sessions ranked by their best turn). The baseline (plain BM25 over the
bare turns) is measured in the same run and the ratios printed.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localqwen.vocabulary import events as ev

CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop"}
NEIGHBOURS = 1


def default_data() -> Path:
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo10.json"


def load(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"LoCoMo data not found: {path} (pass --data)")
    return json.loads(path.read_text(encoding="utf-8"))


def turns_of(sample: dict[str, Any]) -> list[dict[str, Any]]:
    conversation = sample["conversation"]
    turns = []
    number = 1
    while f"session_{number}" in conversation:
        date = conversation.get(f"session_{number}_date_time", "")
        for turn in conversation[f"session_{number}"]:
            turns.append({"id": turn["dia_id"], "session": number, "date": date, "speaker": turn["speaker"],
                          "text": turn.get("text", "") + (f" [shares a photo: {turn['blip_caption']}]"
                                                          if turn.get("blip_caption") else "")})
        number += 1
    return turns


def evaluate_conversation(store, sample: dict[str, Any], *, mode: str, contextual: bool, k: int = 10) -> list[dict]:
    persona = f"locomo-{sample['sample_id']}-{'ctx' if contextual else 'bare'}"
    turns = turns_of(sample)
    ids = {}
    for index, turn in enumerate(turns):
        context = ""
        if contextual:
            around = [t for t in turns[max(0, index - NEIGHBOURS): index + NEIGHBOURS + 1]
                      if t is not turn and t["session"] == turn["session"]]
            context = f"{turn['speaker']}, {turn['date']}\n" + "\n".join(f"{t['speaker']}: {t['text']}" for t in around)
        memory, _ = store.add(f"{turn['speaker']}: {turn['text']}", persona=persona, kind="turn", context=context,
                              source_session=turn["session"], source_message=index)
        ids[memory.id] = turn["id"]
    results = []
    for qa in sample["qa"]:
        if qa.get("category") not in CATEGORIES or not qa.get("evidence"):
            continue
        # A few annotations are malformed ("D8:6; D9:17", "D:11:26"): take every well-formed id.
        evidence = {match for e in qa["evidence"] for match in re.findall(r"D\d+:\d+", e)}
        if not evidence:
            continue
        started = time.perf_counter()
        hits = store.search(qa["question"], persona, k=50, mode=mode)
        elapsed = (time.perf_counter() - started) * 1000
        found = [ids[h.memory.id] for h in hits]
        sessions: list[int] = []
        for h in hits:
            if h.memory.source_session not in sessions:
                sessions.append(h.memory.source_session)
        wanted_sessions = {int(e.split(":")[0][1:]) for e in evidence}
        results.append({"category": qa["category"], "all_at_10": evidence <= set(found[:k]),
                        "session_all_at_5": wanted_sessions <= set(sessions[:5]), "ms": elapsed})
    return results


def summarise(results: list[dict]) -> dict[str, Any]:
    import numpy as np

    n = len(results) or 1
    report: dict[str, Any] = {"questions": len(results),
                              "all_at_10": sum(r["all_at_10"] for r in results) / n,
                              "session_all_at_5": sum(r["session_all_at_5"] for r in results) / n,
                              "p95_ms": float(np.percentile([r["ms"] for r in results], 95)) if results else 0.0}
    for number, name in CATEGORIES.items():
        rows = [r for r in results if r["category"] == number]
        report[name] = sum(r["all_at_10"] for r in rows) / len(rows) if rows else None
    return report


def evaluate_locomo(samples: list[dict[str, Any]], *, mode: str = "hybrid", embedder=None) -> dict[str, Any]:
    from localqwen.storage.database import Database
    from localqwen_memory.store import MemoryStore

    with tempfile.TemporaryDirectory(prefix="memory-locomo-") as folder:
        database = Database(Path(folder) / "memory.sqlite3")
        ours = MemoryStore(database, Path(folder) / "vectors", embedder=embedder if mode == "hybrid" else None)
        plain = MemoryStore(database)
        ours_results, base_results = [], []
        for sample in samples:
            ours_results += evaluate_conversation(ours, sample, mode=mode, contextual=True)
            base_results += evaluate_conversation(plain, sample, mode="bm25", contextual=False)
        database.close()
    report = summarise(ours_results)
    report["mode"] = mode
    report["conversations"] = len(samples)
    report["baseline"] = summarise(base_results)
    report["ratios"] = {key: (report[key] / report["baseline"][key] if report["baseline"][key] else None)
                        for key in ("all_at_10", "session_all_at_5", "multi_hop")}
    return report


def run_suite(ctx, form) -> Iterator[Any]:
    from localqwen.retrieval.embeddings import get_embedder

    path = Path(form.data).expanduser() if form.data else default_data()
    try:
        samples = load(path)
    except (OSError, ValueError) as exc:
        yield ev.Error(message=str(exc), field="data")
        yield ev.Done(status="failed", summary=str(exc))
        return
    if form.conversations:
        samples = samples[: form.conversations]
    yield ev.Progress(done=0, total=len(samples), message=f"LoCoMo: {len(samples)} conversation(s), {form.mode}")
    report = evaluate_locomo(samples, mode=form.mode, embedder=lambda: get_embedder(manager=ctx.device))
    base = report["baseline"]
    rows = [[key, round(report[key], 4) if report[key] is not None else "", round(base[key], 4) if base[key] is not None else ""]
            for key in ("all_at_10", "multi_hop", "temporal", "open_domain", "single_hop", "session_all_at_5", "p95_ms")]
    yield ev.Table(title=f"LoCoMo evidence recall ({report['questions']} questions)",
                   columns=["metric", "memory search", "baseline BM25 (bare turns)"], rows=rows)
    yield ev.Done(summary=f"all@10 {report['all_at_10']:.1%} (baseline {base['all_at_10']:.1%}), "
                          f"session all@5 {report['session_all_at_5']:.1%}, p95 {report['p95_ms']:.1f} ms",
                  result=report)
