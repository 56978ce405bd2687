"""LoCoMo evidence recall of the memory chat's text recall vs plain BM25 over bare turns (issue 14).

    .venv/bin/python bench/bench_memory_locomo.py --mode bm25      # all 10 conversations, seconds
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid    # + bge-small vectors (the chat's default)
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid --embedder offline:all-MiniLM-L6-v2  # + MiniLM's
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid --facts  # + LoCoMo's observations as facts
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid --extracted /work/memory_real --limit 2
                                                    # + the facts bench_memory_real.py extracted there
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid --limit 1
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid --subject-weight 0  # ablations of recall.RANKING
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid --date-weight 0     # without dated recall
    .venv/bin/python bench/bench_memory_locomo.py --mode hybrid --token-weight 0 --session-token-weight 0
                                                    # without word-by-word matching

Prints the report as JSON: all_at_10, per category, session_all_at_5, p95_ms (one recall, the
query's embedding included, one thread) and p95_cpu_ms (the same in CPU time, which a busy
shared machine inflates less), the baseline measured in the same run, the ratios, and with more
than five conversations the tuning half (1-5, where recall.py's weights were chosen) and the
held-out half (6-10) apart. The turns' vectors are computed once and kept in --vector-cache (the
chat keeps them in LanceDB); the first hybrid run embeds ~5,900 turns (~5 min with bge on 2 cores,
~10 with MiniLM on 2 busy cores)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    from localqwen_memory.locomo_eval import default_data, evaluate_locomo, load

    from localqwen.paths import app_paths

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--limit", type=int, default=0, help="first N conversations only (0 = all)")
    parser.add_argument("--mode", choices=["bm25", "hybrid"], default="bm25")
    parser.add_argument("--embedder", default=None,
                        help="the embedding model (default: the memory chat's, store.memory_embedder_name)")
    parser.add_argument("--vector-cache", type=Path, default=app_paths().cache_dir / "memory" / "locomo-vectors",
                        help="folder keeping the turns' vectors between runs")
    parser.add_argument("--facts", action="store_true",
                        help="put LoCoMo's annotated observations beside the turns as facts (standing in for "
                             "what the extraction model stores); a recalled fact counts for its source turns")
    parser.add_argument("--extracted", type=Path, default=None, metavar="WORK_DIR",
                        help="put the facts a real model extracted beside the turns (the records of "
                             "bench_memory_real.py --part extraction in WORK_DIR); a recalled fact counts for its turn")
    parser.add_argument("--session-weight", type=float, default=None,
                        help="ablation: another session share than the chat's (recall.RANKING)")
    parser.add_argument("--subject-weight", type=float, default=None,
                        help="ablation: another bonus for memories about the person the question names "
                             "(0: the name stays in the query and nothing is added)")
    parser.add_argument("--neighbour-penalty", type=float, default=None,
                        help="ablation: another penalty per adjacent memory of the same session ranked before")
    parser.add_argument("--date-weight", type=float, default=None,
                        help="ablation: another bonus for memories dated in the day or month the question names")
    parser.add_argument("--date-slack-days", type=int, default=None,
                        help="ablation: how many days outside that day or month a memory still counts")
    parser.add_argument("--candidates", type=int, default=None,
                        help="ablation: another number of the store's candidates re-scored")
    parser.add_argument("--token-weight", type=float, default=None,
                        help="ablation: another weight of each memory's word-by-word match with the question")
    parser.add_argument("--session-token-weight", type=float, default=None,
                        help="ablation: another weight of its session's word-by-word match")
    args = parser.parse_args()
    ranking = None
    changes = {name: value for name, value in (("candidates", args.candidates),
                                                ("session_weight", args.session_weight),
                                                ("subject_weight", args.subject_weight),
                                                ("neighbour_penalty", args.neighbour_penalty),
                                                ("date_weight", args.date_weight),
                                                ("date_slack_days", args.date_slack_days),
                                                ("token_weight", args.token_weight),
                                                ("session_token_weight", args.session_token_weight))
               if value is not None}
    if changes:
        from dataclasses import replace

        from localqwen_memory.recall import RANKING

        ranking = replace(RANKING, **changes)
    if args.facts and args.extracted:
        parser.error("--facts and --extracted are two sources of facts: choose one")
    extracted = None
    if args.extracted:
        from localqwen_memory.locomo_facts import extraction_records

        extracted = extraction_records(args.extracted)
        if not extracted:
            parser.error(f"no extraction records in {args.extracted} (bench_memory_real.py --part extraction)")
    samples = load(args.data)
    if args.limit:
        samples = samples[: args.limit]
    embedder = None
    if args.mode == "hybrid":
        import torch
        from localqwen_memory.store import memory_embedder_name

        from localqwen.retrieval.embeddings import get_embedder

        torch.set_num_threads(1)  # the per-query latency of one chat turn, not of a parallel batch
        name = memory_embedder_name(args.embedder)

        def embedder():
            return get_embedder(name, threads=1)  # onnxruntime pinned to one thread as torch is
    print(json.dumps(evaluate_locomo(samples, mode=args.mode, embedder=embedder, vector_cache=args.vector_cache,
                                     facts=args.facts, extracted=extracted, ranking=ranking),
                     indent=1))


if __name__ == "__main__":
    main()
