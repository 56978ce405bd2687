"""PubMedQA yes / no / maybe accuracy with a real model through the medical plugin's decision path
(issue 13: above the 55.2% majority baseline). Each question is decided in up to two evidence
settings, on the same items: ``reader`` (its own abstract as the numbered evidence) and
``retrieved`` (what the plugin's evidence gathering finds in the split's passages, BM25, k = 5).

The label comes from ``plugins/localqwen_medical/decision.py``: the next-token log-probabilities of
yes / no / maybe from ONE prompt evaluation (llama.cpp), so each record keeps the three scores and
the report gives the accuracy both without and with the per-model bias
(``decision_calibration.json``), from the same model pass. ``--split dev`` decides the 500
expert-labelled questions that are not in the test set; ``--fit`` then fits the bias on them and
writes it for the model (never on test items: the fit refuses them).

Reports accuracy with 95% Wilson intervals, the label distribution, seconds per item, the majority
("yes") baseline on the same items, confusion matrices and McNemar p-values (against always "yes",
calibrated against uncalibrated, the settings against each other). Records go to a JSONL file as
items finish, and a rerun with the same --records resumes, so a run cut short still reports a
seeded random subset. A second process can work from the other end of the same subset
(``--from-end``, its own file first in --records, the first process's file after it).

    python bench/bench_medical_pubmedqa.py --split dev --settings reader --limit 150 --records /tmp/pqa_dev.jsonl --fit
    python bench/bench_medical_pubmedqa.py --split test --settings reader --limit 200 --records /tmp/pqa_test.jsonl
    python bench/bench_medical_pubmedqa.py --records /tmp/pqa_test.jsonl --limit 200 --report-only   # no model
    python bench/bench_medical_pubmedqa.py --model gemma.gguf --limit 3                              # any GGUF
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
    parser.add_argument("--split", choices=["test", "dev"], default="test",
                        help="test: the 500 of test_set.json; dev: the other 500 expert-labelled items of ori_pqal.json")
    parser.add_argument("--limit", type=int, default=100, help="questions, a seeded random subset of the split's 500")
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
    parser.add_argument("--fit", action="store_true",
                        help="after deciding, fit the per-label bias on these records (--split dev only) and save it")
    parser.add_argument("--fit-setting", choices=["reader", "retrieved"], default="reader")
    parser.add_argument("--calibration", type=Path, default=None,
                        help="the calibration file read and written (default: the plugin's decision_calibration.json)")
    args = parser.parse_args(argv)
    if args.fit and args.split != "dev":
        parser.error("--fit fits on the dev split only (--split dev): never on test items")

    from localqwen_medical.decision_calibration import (
        calibration_for,
        dev_items,
        fit_calibration,
        save_calibration,
    )
    from localqwen_medical.decision_suite import decide_item, seeded_order, summarize
    from localqwen_medical.grounding_suite import build_index, load_items
    from localqwen_medical.router_suite import default_data_dir

    data_dir = args.data_dir or default_data_dir()
    test_items = load_items(data_dir)
    items = test_items if args.split == "test" else dev_items(data_dir)
    order = seeded_order(items, args.seed)[: args.limit]
    records = [r for r in read_records(args.records) if r["pubmed_id"] in set(order)]
    done = {r["pubmed_id"] for r in records}
    sys.path.insert(0, str(ROOT / "bench"))
    from real_model import FILE_NAME

    model_name = args.model.name if args.model else FILE_NAME
    if not args.report_only and len(done) < len(order):
        from localqwen_medical.decision import AUTO

        from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

        if args.model is None:
            from real_model import real_model_path

            args.model = real_model_path()
        model_name = args.model.name
        index = build_index(items)
        engine = LlamaCppEngine(args.model, n_ctx=4096, n_threads=args.threads)
        # The plugin's own file unless another is given (then its fit for the model, or no bias).
        use = AUTO if args.calibration is None else calibration_for(engine.model_id, args.calibration)
        started = time.perf_counter()
        try:
            todo = [p for p in order if p not in done]
            for number, pubmed_id in enumerate(todo[::-1] if args.from_end else todo, start=1):
                record = decide_item(engine, index, pubmed_id, items[pubmed_id], settings=args.settings, k=args.k,
                                     calibration=use)
                records.append(record)
                if args.records:
                    with args.records[0].open("a", encoding="utf-8") as out:
                        out.write(json.dumps(record) + "\n")
                right = {s: sum(r[s]["label"] == r["gold"] for r in records if s in r) for s in args.settings}
                print(f"{len(records)}/{len(order)} " + " ".join(f"{s} {right[s]}" for s in args.settings)
                      + f"  ({(time.perf_counter() - started) / number:.1f} s/item)", file=sys.stderr, flush=True)
        finally:
            engine.close()
    records.sort(key=lambda r: order.index(r["pubmed_id"]))
    if args.fit:
        fitted = fit_calibration(records, test_ids=set(test_items), model=Path(model_name).stem, setting=args.fit_setting,
                                 source=f"PubMedQA ori_pqal.json minus test_set.json (dev split), seed {args.seed}, "
                                        f"first {len(records)} of the seeded order, {args.fit_setting} setting")
        written = save_calibration(fitted, args.calibration)
        print(f"fitted bias {fitted.bias} on {fitted.items} dev items -> {written}", file=sys.stderr)
    fit = calibration_for(model_name, args.calibration)
    report = summarize(records, seed=args.seed, model=model_name, bias=fit.bias if fit else None, split=args.split)
    if fit is not None:
        report["calibration"] = {"bias": fit.bias, "items": fit.items, "source": fit.source, "fitted_at": fit.fitted_at}
        if args.split == "dev":
            report["calibration"]["note"] = "calibrated accuracy on dev items the bias was fitted on is optimistic"
    report["requested_items"] = len(order)
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
