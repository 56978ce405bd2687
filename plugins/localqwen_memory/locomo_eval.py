"""``evaluate --suite locomo``: judge-free evidence recall on LoCoMo (locomo10.json).

Each conversation's turns go into a throw-away memory store (one persona per conversation) as
raw turns, each indexed with its context: speaker, session date and the neighbouring turns (the
speaker is also the turn's subject, who it is about, as the extractor names a fact's), and every
question is answered by :func:`localqwen_memory.recall.rank_memories`, the ranking the chat's
text recall uses. For every QA of categories 1-4, a hit means all its evidence turns ("D1:3") are
among the top 10 (``all_at_10``), and at session level all evidence sessions among the first 5
sessions of the ranked list (``session_all_at_5``). The baseline (plain BM25 over the bare turns)
is measured in the same run and the ratios printed. ``p95_ms`` is the time of one recall, the
query's embedding included (each persona's index is built once before timing, as the chat keeps
its store warm).

The ranking's parameters were chosen on conversations 1-5 only; with more than five
conversations the report also gives ``splits``: the tuning half and the held-out half (6-10).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
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


def observations_of(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """LoCoMo's annotated observations ("Melanie signed up for a pottery class."), each with the
    turns it was drawn from: what a good extraction model would store as facts."""
    conversation = sample["conversation"]
    facts = []
    for key, by_speaker in sample.get("observation", {}).items():
        number = int(key.split("_")[1])
        date = conversation.get(f"session_{number}_date_time", "")
        for speaker, items in by_speaker.items():
            for item in items:
                turn_ids = re.findall(r"D\d+:\d+", str(item[1])) if len(item) > 1 else []
                if item and str(item[0]).strip():
                    facts.append({"text": str(item[0]).strip(), "session": number, "speaker": speaker, "date": date,
                                  "turns": turn_ids})
    return facts


def turn_context(turns: list[dict[str, Any]], index: int, neighbours: int = NEIGHBOURS) -> str:
    """What a turn is indexed with: its speaker and date, and its neighbouring turns of the same session."""
    turn = turns[index]
    around = [t for t in turns[max(0, index - neighbours): index + neighbours + 1]
              if t is not turn and t["session"] == turn["session"]]
    return f"{turn['speaker']}, {turn['date']}\n" + "\n".join(f"{t['speaker']}: {t['text']}" for t in around)


def session_time(text: str) -> float | None:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as a timestamp; None when it does not parse."""
    text = " ".join(str(text).split())
    for pattern in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(text, pattern).timestamp()
        except ValueError:
            continue
    return None


def fill_store(store, turns: list[dict[str, Any]], persona: str, *, contextual: bool = True) -> dict[str, int]:
    """Every turn as a raw memory: "Speaker: text", the speaker as its subject (who it is about, as
    the extractor names a fact's subject), dated with its session's date as a chat turn is with the
    time it was said, and (``contextual``) indexed with its speaker, date and neighbouring turns of
    the session. Returns the memory id of each turn id ("D1:3")."""
    ids: dict[str, int] = {}
    for index, turn in enumerate(turns):
        memory, _ = store.add(f"{turn['speaker']}: {turn['text']}", persona=persona, kind="turn",
                              context=turn_context(turns, index) if contextual else "", subject=turn["speaker"],
                              source_session=turn["session"], source_message=index,
                              valid_from=session_time(turn["date"]))
        ids[turn["id"]] = memory.id
    return ids


TUNING_CONVERSATIONS = 5  # the ranking's parameters were picked on these only (recall.py)


def evaluate_conversation(store, sample: dict[str, Any], *, mode: str, contextual: bool, k: int = 10,
                          conversation: int = 0, facts: bool = False, extracted: list[dict] | None = None,
                          ranking=None) -> list[dict]:
    """Contextual turns are searched as the chat recalls (``rank_memories``); bare turns with plain
    BM25 (``store.search``), the baseline. ``facts``: LoCoMo's observations go in beside the turns as
    facts (the chat keeps both), and a recalled fact counts for the turns it was drawn from.
    ``extracted``: the same with the facts a real model extracted (``locomo_facts``) instead."""
    from localqwen_memory.locomo_facts import add_extracted_facts
    from localqwen_memory.recall import RANKING, rank_memories

    kept = "-facts" if facts else "-extracted" if extracted is not None else ""
    persona = f"locomo-{sample['sample_id']}-{'ctx' if contextual else 'bare'}{kept}"
    turns = turns_of(sample)
    ids = {memory_id: [turn_id] for turn_id, memory_id in fill_store(store, turns, persona,
                                                                     contextual=contextual).items()}
    if facts:
        position = {turn["id"]: index for index, turn in enumerate(turns)}
        for fact in observations_of(sample):
            first = next((position[t] for t in fact["turns"] if t in position), None)
            memory, _ = store.add(fact["text"], persona=persona, fact=fact["text"], kind="fact",
                                  context=f"{fact['speaker']}, {fact['date']}", subject=fact["speaker"],
                                  source_session=fact["session"], source_message=first,
                                  valid_from=session_time(fact["date"]))
            ids[memory.id] = ids.get(memory.id, []) + fact["turns"]  # the same fact twice: both sources
    if extracted is not None and contextual:
        for decision, turn_id in add_extracted_facts(store, extracted, sample["sample_id"], persona):
            if decision.memory is None or decision.memory.kind != "fact":
                continue  # nothing stored (forgotten before), or the near-duplicate of a raw turn
            sources = ids.setdefault(decision.memory.id, [])  # a fact drawn twice counts for both turns
            if turn_id not in sources:
                sources.append(turn_id)

    def search(question: str) -> list:
        if contextual:
            return rank_memories(store, question, persona, k=50, mode=mode, settings=ranking or RANKING)
        return store.search(question, persona, k=50, mode="bm25")

    results: list[dict] = []
    for qa in sample["qa"]:
        if qa.get("category") not in CATEGORIES or not qa.get("evidence"):
            continue
        # A few annotations are malformed ("D8:6; D9:17", "D:11:26"): take every well-formed id.
        evidence = {match for e in qa["evidence"] for match in re.findall(r"D\d+:\d+", e)}
        if not evidence:
            continue
        if not results:
            search(qa["question"])  # build the persona's index (and load the embedder) untimed
        started, cpu_started = time.perf_counter(), time.thread_time()
        hits = search(qa["question"])
        elapsed = (time.perf_counter() - started) * 1000
        cpu = (time.thread_time() - cpu_started) * 1000
        found = {turn for h in hits[:k] for turn in ids[h.memory.id]}
        sessions: list[int] = []
        for h in hits:
            if h.memory.source_session not in sessions:
                sessions.append(h.memory.source_session)
        wanted_sessions = {int(e.split(":")[0][1:]) for e in evidence}
        results.append({"conversation": conversation, "category": qa["category"], "all_at_10": evidence <= found,
                        "session_all_at_5": wanted_sessions <= set(sessions[:5]), "ms": elapsed, "cpu_ms": cpu})
    return results


def summarise(results: list[dict]) -> dict[str, Any]:
    import numpy as np

    n = len(results) or 1
    report: dict[str, Any] = {"questions": len(results),
                              "all_at_10": sum(r["all_at_10"] for r in results) / n,
                              "session_all_at_5": sum(r["session_all_at_5"] for r in results) / n,
                              "p95_ms": float(np.percentile([r["ms"] for r in results], 95)) if results else 0.0,
                              "p95_cpu_ms": float(np.percentile([r["cpu_ms"] for r in results], 95)) if results else 0.0}
    by_category: dict[str, float | None] = {}
    for number, name in CATEGORIES.items():
        rows = [r for r in results if r["category"] == number]
        report[name] = sum(r["all_at_10"] for r in rows) / len(rows) if rows else None
        by_category[name] = sum(r["session_all_at_5"] for r in rows) / len(rows) if rows else None
    # where session all@5 is lost: multi-hop questions need every one of their 2-4 sessions in the five
    report["session_all_at_5_by_category"] = by_category
    return report


def evaluate_locomo(samples: list[dict[str, Any]], *, mode: str = "hybrid", embedder=None,
                    vector_cache: Path | None = None, facts: bool = False, extracted: list[dict] | None = None,
                    ranking=None) -> dict[str, Any]:
    """``embedder``: a zero-argument callable returning the embedder (hybrid mode). ``vector_cache``:
    a folder where the turns' vectors are kept between runs (queries are always embedded live).
    ``facts``: LoCoMo's annotated observations stand in for extracted facts beside the turns.
    ``extracted``: extraction records (``locomo_facts.extraction_records``): the facts a real model
    extracted go beside the turns instead (a conversation without records gets none).
    ``ranking``: other :class:`RankSettings` than the chat's, for ablations."""
    from localqwen.storage.database import Database
    from localqwen_memory.store import MemoryStore
    from localqwen_memory.vector_cache import CachedEmbedder

    cached: list[CachedEmbedder] = []
    if mode == "hybrid" and embedder is not None and vector_cache is not None:
        load_embedder = embedder

        def embedder():
            cached.append(CachedEmbedder(load_embedder(), vector_cache))
            return cached[-1]

    with tempfile.TemporaryDirectory(prefix="memory-locomo-") as folder:
        database = Database(Path(folder) / "memory.sqlite3")
        ours = MemoryStore(database, Path(folder) / "vectors", embedder=embedder if mode == "hybrid" else None)
        plain = MemoryStore(database)
        ours_results, base_results = [], []
        try:
            for number, sample in enumerate(samples, 1):
                ours_results += evaluate_conversation(ours, sample, mode=mode, contextual=True, conversation=number,
                                                      facts=facts, extracted=extracted, ranking=ranking)
                base_results += evaluate_conversation(plain, sample, mode="bm25", contextual=False,
                                                      conversation=number)
            reader = ours.embedder_name if mode == "hybrid" and embedder is not None else None
        finally:
            for cache in cached:
                cache.save()
            database.close()
    report = summarise(ours_results)
    report["mode"] = mode
    report["embedder"] = reader
    report["facts"] = ("LoCoMo observations beside the turns" if facts else
                       "extracted facts beside the turns" if extracted is not None else "none (raw turns only)")
    report["conversations"] = len(samples)
    if ranking is not None:
        report["ranking"] = repr(ranking)
    report["baseline"] = summarise(base_results)
    report["ratios"] = {key: (report[key] / report["baseline"][key] if report["baseline"][key] else None)
                        for key in ("all_at_10", "session_all_at_5", "multi_hop")}
    if len(samples) > TUNING_CONVERSATIONS:
        report["splits"] = {
            f"tune (conversations 1-{TUNING_CONVERSATIONS})":
                summarise([r for r in ours_results if r["conversation"] <= TUNING_CONVERSATIONS]),
            f"held out (conversations {TUNING_CONVERSATIONS + 1}-{len(samples)})":
                summarise([r for r in ours_results if r["conversation"] > TUNING_CONVERSATIONS])}
    return report


def run_suite(ctx, form) -> Iterator[Any]:
    from localqwen_memory.store import memory_embedder

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
    report = evaluate_locomo(samples, mode=form.mode, embedder=memory_embedder(ctx),
                             vector_cache=ctx.paths.cache_dir / "memory" / "locomo-vectors")
    base = report["baseline"]
    splits = report.get("splits", {})

    def cell(value):
        return round(value, 4) if value is not None else ""

    rows = [[key, cell(report[key]), cell(base[key]), *(cell(split[key]) for split in splits.values())]
            for key in ("all_at_10", "multi_hop", "temporal", "open_domain", "single_hop", "session_all_at_5", "p95_ms",
                         "p95_cpu_ms")]
    yield ev.Table(title=f"LoCoMo evidence recall ({report['questions']} questions)",
                   columns=["metric", "memory recall", "baseline BM25 (bare turns)", *splits], rows=rows)
    yield ev.Done(summary=f"all@10 {report['all_at_10']:.1%} (baseline {base['all_at_10']:.1%}), "
                          f"session all@5 {report['session_all_at_5']:.1%}, p95 {report['p95_ms']:.1f} ms",
                  result=report)
