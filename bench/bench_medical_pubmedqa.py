"""PubMedQA yes / no / maybe accuracy with a real model through the medical plugin's grounded path
(issue 13: above the 55.2% majority baseline). Each question is decided twice, on the same items:
``reader`` (its own abstract as the numbered evidence) and ``retrieved`` (what the plugin's
evidence gathering finds in the 1,689-passage knowledge base, BM25, k = 5); the label is forced
to yes / no / maybe by a llama.cpp grammar (plugins/localqwen_medical/decision.py).

Reports accuracy with 95% Wilson intervals, the majority ("yes") baseline on the same items, the
confusion matrices and McNemar p-values (each setting against the baseline, the settings against
each other). Records go to a JSONL file as items finish, and a rerun with the same --records
resumes, so a run cut short still reports a seeded random subset. A second process can work from
the other end of the same subset (``--from-end``, its own file first in --records, the first
process's file after it); the report reads every file given.

    python bench/bench_medical_pubmedqa.py --limit 100 --records /tmp/pubmedqa.jsonl   # the real 1.5B model: ~1-2 min/item on 2 busy cores
    python bench/bench_medical_pubmedqa.py --records /tmp/pubmedqa.jsonl --report-only  # the report from what finished
    python bench/bench_medical_pubmedqa.py --limit 100 --from-end --records /tmp/pubmedqa2.jsonl /tmp/pubmedqa.jsonl
    python bench/bench_medical_pubmedqa.py --model gemma.gguf --limit 3                 # any GGUF
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

NEEDS_REAL_MODEL = True  # bench/run_all.py runs it only with --real
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT))


def read_records(paths: list[Path]) -> list[dict]:
    """Every decided item in ``paths``, once per question (the first file that has it wins)."""
    found: dict[str, dict] = {}
    for path in paths:
        if path.is_file():
            for line in path.read_text("utf-8").splitlines():
                if line.strip():
                    record = json.loads(line)
                    found.setdefault(record["pubmed_id"], record)
    return list(found.values())


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=100, help="questions, a seeded random subset of the 500")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--settings", nargs="+", default=["reader", "retrieved"], choices=["reader", "retrieved"])
    parser.add_argument("--k", type=int, default=5, help="passages the retrieved setting shows (the chat's default)")
    parser.add_argument("--model", type=Path, help="a GGUF (default: the real model from bench/real_model.py)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: ../shared/data")
    parser.add_argument("--records", type=Path, nargs="+", default=[],
                        help="JSONL of decided items: the first is appended to as items finish; all are resumed from")
    parser.add_argument("--from-end", action="store_true", help="decide the subset's remaining items last first")
    parser.add_argument("--report-only", action="store_true", help="summarize --records without loading a model")
    parser.add_argument("--json", type=Path, help="write the report here too")
    args = parser.parse_args(argv)

    from localqwen_medical.decision_suite import decide_item, seeded_order, summarize
    from localqwen_medical.grounding_suite import build_index, load_items

    items = load_items(args.data_dir)
    order = seeded_order(items, args.seed)[: args.limit]
    records = [r for r in read_records(args.records) if r["pubmed_id"] in set(order)]
    done = {r["pubmed_id"] for r in records}
    sys.path.insert(0, str(ROOT / "bench"))
    from real_model import FILE_NAME

    model_name = args.model.name if args.model else FILE_NAME
    if not args.report_only and len(done) < len(order):
        from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

        if args.model is None:
            from real_model import real_model_path

            args.model = real_model_path()
        model_name = args.model.name
        index = build_index(items)
        engine = LlamaCppEngine(args.model, n_ctx=4096, n_threads=args.threads)
        started = time.perf_counter()
        try:
            todo = [p for p in order if p not in done]
            for number, pubmed_id in enumerate(todo[::-1] if args.from_end else todo, start=1):
                record = decide_item(engine, index, pubmed_id, items[pubmed_id], settings=args.settings, k=args.k)
                records.append(record)
                if args.records:
                    with args.records[0].open("a", encoding="utf-8") as out:
                        out.write(json.dumps(record) + "\n")
                right = {s: sum(r[s]["label"] == r["gold"] for r in records if s in r) for s in args.settings}
                print(f"{len(records)}/{len(order)} " + " ".join(f"{s} {right[s]}" for s in args.settings)
                      + f"  ({(time.perf_counter() - started) / number:.0f} s/item)", file=sys.stderr, flush=True)
        finally:
            engine.close()
    records.sort(key=lambda r: order.index(r["pubmed_id"]))
    report = summarize(records, seed=args.seed, model=model_name)
    report["requested_items"] = len(order)
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
