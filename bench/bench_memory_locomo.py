"""LoCoMo evidence recall of the memory plugin's search vs plain BM25 over bare turns (issue 14).

    .venv/bin/python bench/bench_memory_locomo.py --mode bm25            # all 10 conversations
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid --limit 1  # + MiniLM vectors (slow on 2 cores)

Prints the report as JSON: all_at_10, per category, session_all_at_5, p95_ms, the baseline
measured in the same run, and the ratios."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    from localqwen_memory.locomo_eval import default_data, evaluate_locomo, load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--limit", type=int, default=0, help="first N conversations only (0 = all)")
    parser.add_argument("--mode", choices=["bm25", "hybrid"], default="bm25")
    args = parser.parse_args()
    samples = load(args.data)
    if args.limit:
        samples = samples[: args.limit]
    embedder = None
    if args.mode == "hybrid":
        from localqwen.retrieval.embeddings import get_embedder

        embedder = get_embedder
    print(json.dumps(evaluate_locomo(samples, mode=args.mode, embedder=embedder), indent=1))


if __name__ == "__main__":
    main()
