"""What a chat turn costs the memory store as a persona grows: one memory written, then one recall.

    .venv/bin/python bench/bench_memory_write_search.py                 # 1, 3 and 10 LoCoMo conversations
    .venv/bin/python bench/bench_memory_write_search.py --sizes 1 --cycles 5
    .venv/bin/python bench/bench_memory_write_search.py --embedder offline:all-MiniLM-L6-v2

A persona is filled with the turns of the first N LoCoMo conversations (real text, as the LoCoMo
bench fills it), then each cycle adds one turn of a conversation not in it and runs the chat's
recall (``rank_memories``) for one of LoCoMo's questions, the pattern of a chat turn. Two stores run
the same cycles on their own copies: the baseline rebuilds the persona's search index after each
write (``incremental_index = False``, what every write did before), the other extends it by the new
memory. Both must recall the same memories in the same order (checked every cycle). Prints per size
the median and p95 of a cycle in each, their ratio, and a recall without a write for reference.
Vectors of the filled turns come from --vector-cache (as in bench_memory_locomo.py); a cycle's new
memory and its question are embedded live, in both arms, by the memory chat's embedder (bge-small
where installed; ``--embedder`` for another). One thread (torch and onnxruntime)."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    from localqwen_memory.locomo_eval import default_data, load

    from localqwen.paths import app_paths

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--sizes", default="1,3,10", help="numbers of LoCoMo conversations in the persona")
    parser.add_argument("--cycles", type=int, default=20, help="write + recall cycles per size and arm")
    parser.add_argument("--vector-cache", type=Path, default=app_paths().cache_dir / "memory" / "locomo-vectors")
    parser.add_argument("--embedder", default=None,
                        help="the embedding model (default: the memory chat's, store.memory_embedder_name)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # one chat turn's latency, not a parallel batch's
    samples = load(args.data)
    from localqwen_memory.store import memory_embedder_name

    name = memory_embedder_name(args.embedder)
    report = {"cycles": args.cycles, "embedder": name, "sizes": []}
    for size in (int(part) for part in args.sizes.split(",")):
        report["sizes"].append(measure(samples, min(size, len(samples) - 1), args.cycles, args.vector_cache, name))
        print(json.dumps(report["sizes"][-1]), flush=True)
    print(json.dumps(report, indent=1))


def measure(samples: list[dict], conversations: int, cycles: int, vector_cache: Path,
            embedder_name: str | None = None) -> dict:
    from localqwen_memory.locomo_eval import fill_store, turns_of
    from localqwen_memory.recall import rank_memories
    from localqwen_memory.store import MemoryStore, memory_embedder_name
    from localqwen_memory.vector_cache import CachedEmbedder

    from localqwen.retrieval.embeddings import get_embedder
    from localqwen.storage.database import Database

    embedder = CachedEmbedder(get_embedder(memory_embedder_name(embedder_name), threads=1), vector_cache)
    newcomer = samples[conversations]  # its turns are the new memories, its questions the recalls
    new_turns = turns_of(newcomer)[:cycles]
    questions = [qa["question"] for qa in newcomer["qa"]][:cycles]
    timings: dict[str, list[float]] = {}
    answers: dict[str, list[list[int]]] = {}
    with tempfile.TemporaryDirectory(prefix="memory-write-search-") as folder:
        stores = {}
        for arm in ("rebuild", "extend"):
            store = MemoryStore(Database(Path(folder) / f"{arm}.sqlite3"), Path(folder) / f"{arm}-vectors",
                                embedder=lambda: embedder)
            store.incremental_index = arm == "extend"
            for sample in samples[:conversations]:
                fill_store(store, turns_of(sample), "p", contextual=True)
            rank_memories(store, "warm up", "p", k=10)
            stores[arm] = store
        memories = len(stores["extend"].list("p"))
        for turn, question in zip(new_turns, questions, strict=False):
            for arm, store in stores.items():  # interleaved, so both see the same machine load
                start = time.perf_counter()
                store.add(f"{turn['speaker']}: {turn['text']}", persona="p", kind="turn", subject=turn["speaker"],
                          source_session=10_000 + turn["session"], source_message=0)
                hits = rank_memories(store, question, "p", k=10)
                timings.setdefault(arm, []).append((time.perf_counter() - start) * 1000)
                answers.setdefault(arm, []).append([hit.memory.id for hit in hits])
        recall_only = []
        for question in questions:
            start = time.perf_counter()
            rank_memories(stores["extend"], question, "p", k=10)
            recall_only.append((time.perf_counter() - start) * 1000)
        embedder.save()
        for store in stores.values():
            store.database.close()
    if answers["rebuild"] != answers["extend"]:
        raise SystemExit(f"{conversations} conversations: the extended index recalled other memories than the rebuilt one")
    summary = {arm: {"median_ms": round(statistics.median(times), 1), "p95_ms": round(_p95(times), 1)}
               for arm, times in timings.items()}
    return {"conversations": conversations, "memories": memories, **summary,
            "recall_only_median_ms": round(statistics.median(recall_only), 1),
            "ratio_median": round(summary["extend"]["median_ms"] / summary["rebuild"]["median_ms"], 3),
            "same_recall": True}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


if __name__ == "__main__":
    main()
