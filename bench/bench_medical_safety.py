"""The medical auditor's safety suite (issue 13): planted-unsafe and safe near-miss drafts
(plugins/localqwen_medical/safety_cases.py, zh + en, seeded) through the auditor; recall, false
alarms and the confusion matrix per rule class, against the issue's targets.

    python bench/bench_medical_safety.py                         # rules only, 448 + 448 cases, seconds
    python bench/bench_medical_safety.py --model PATH --limit 40 # + the critic (a GGUF file or a transformers folder)
    python bench/bench_medical_safety.py --real --limit 16       # + the real 1.5B instruct model (slow on a CPU)
    python bench/bench_medical_safety.py --real --critic-alone --per-class 20 --records /tmp/critic.jsonl
        # the model-judged classes with the critic alone (no rules), beside the rules and the
        # combined auditor; resumable from --records (--report-only summarizes it)

``--limit`` takes cases evenly across the suite (so every class, both languages, both labels).
The suite's drafts come from templates written beside the rules, so the rules-only numbers show
the rules do what they claim on these phrasings, not how they generalise to a model's drafts;
the critic runs are the measurement of that.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT))


def load_engine(path: Path, threads: int):
    if path.is_file() and path.suffix == ".gguf":
        from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

        return LlamaCppEngine(path, n_ctx=4096, n_threads=threads)
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    return TransformersEngine(path)


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-class", type=int, help="unsafe and safe cases per rule class (default 56; 20 with --critic-alone)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="audit only this many cases, spread evenly")
    parser.add_argument("--model", type=Path, help="critic model: a .gguf file or a transformers folder")
    parser.add_argument("--real", action="store_true", help="the real instruct model (bench/real_model.py)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the result dict here")
    parser.add_argument("--critic-alone", action="store_true",
                        help="measure the critic without the rules on the model-judged classes (needs --model/--real)")
    parser.add_argument("--families", nargs="+", help="rule classes for --critic-alone (default: the model-judged four)")
    parser.add_argument("--records", type=Path, help="--critic-alone: JSONL of judged cases, appended and resumed from")
    parser.add_argument("--report-only", action="store_true", help="--critic-alone: summarize --records, no model")
    parser.add_argument("--critic-free", action="store_true",
                        help="--critic-alone: no findings grammar (what forcing the schema changes)")
    parser.add_argument("--critic-tokens", type=int, default=384, help="--critic-alone: the critic's reply limit (the auditor's: 384)")
    args = parser.parse_args(argv)
    if args.critic_alone:
        return critic_alone(args)

    from localqwen_medical.safety_cases import generate, subset
    from localqwen_medical.safety_eval import evaluate_safety

    cases = generate(per_class=args.per_class or 56, seed=args.seed)
    if args.limit:
        cases = subset(cases, args.limit)
    engine = None
    if args.real:
        sys.path.insert(0, str(ROOT / "bench"))
        from real_model import real_model_path

        args.model = real_model_path()
    if args.model:
        engine = load_engine(args.model, args.threads)
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if engine is not None or done == total:
            print(f"\r{done}/{total} cases, {time.perf_counter() - started:.0f}s", end="", file=sys.stderr, flush=True)

    result = evaluate_safety(cases, engine=engine, progress=progress)
    print(file=sys.stderr)
    layers = "+".join(result["layers"])
    print(f"safety suite: {result['unsafe']} unsafe + {result['safe']} safe drafts, layers {layers}"
          + (f", critic {args.model.name}" if args.model else "") + f", {result['elapsed_s']}s")
    print(f"{'rule':<26}{'kind':<16}{'recall':>8}{'false al.':>11}{'TP':>5}{'FN':>5}{'FP':>5}{'TN':>6}  target")
    for rule, c in result["classes"].items():
        recall = "-" if c["recall"] is None else f"{c['recall']:.1%}"
        false_alarm = "-" if c["false_alarm_rate"] is None else f"{c['false_alarm_rate']:.1%}"
        target = f">={c['target_recall']:.0%}/<={c['target_false_alarm']:.0%} {'ok' if c['meets_target'] else 'MISSED'}"
        print(f"{rule:<26}{c['kind']:<16}{recall:>8}{false_alarm:>11}{c['tp']:>5}{c['fn']:>5}{c['fp']:>5}{c['tn']:>6}  {target}")
    if engine is not None:
        print(f"critic answers without usable JSON: {result['critic_errors']} of {result['cases']}")
    for miss in result["errors_sample"][:8]:
        print(f"  {miss['kind']}: {miss['family']} fired={miss['fired']} draft={miss['draft'][:90]!r}")
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    if engine is not None:
        engine.close()
    return result


def critic_alone(args: argparse.Namespace) -> dict:
    """The critic on its own, beside the rules and the combined auditor (critic_eval.py)."""
    from localqwen_medical.critic_eval import LAYERS, cases_for, judge_case, summarize_critic
    from localqwen_medical.safety_eval import MODEL_JUDGED

    cases = cases_for(tuple(args.families or MODEL_JUDGED), per_class=args.per_class or 20, seed=args.seed)
    if args.limit:
        cases = cases[: args.limit]
    records = []
    if args.records and args.records.is_file():
        records = [json.loads(line) for line in args.records.read_text("utf-8").splitlines() if line.strip()]
    records = records[: len(cases)]
    model_name = args.model.name if args.model else ""
    if args.real:
        sys.path.insert(0, str(ROOT / "bench"))
        from real_model import FILE_NAME

        model_name = FILE_NAME
    if not args.report_only and len(records) < len(cases):
        if args.real:
            sys.path.insert(0, str(ROOT / "bench"))
            from real_model import real_model_path

            args.model = real_model_path()
        if args.model is None:
            raise SystemExit("--critic-alone needs a critic: --model PATH or --real")
        model_name = args.model.name
        engine = load_engine(args.model, args.threads)
        started = time.perf_counter()
        try:
            for number, item in enumerate(cases[len(records):], start=1):
                record = judge_case(item, engine, max_new_tokens=args.critic_tokens,
                                    constrained=False if args.critic_free else None)
                if (record["family"], record["expected"], record["draft"]) != (item.family, item.expected, item.case.draft):
                    raise SystemExit("--records holds other cases (another --seed/--per-class/--families?)")
                records.append(record)
                if args.records:
                    with args.records.open("a", encoding="utf-8") as out:
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
                print(f"{len(records)}/{len(cases)} {record['expected']}: critic {record['critic']} "
                      f"({(time.perf_counter() - started) / number:.0f} s/case)", file=sys.stderr, flush=True)
        finally:
            engine.close()
    result = summarize_critic(records, model=model_name)
    print(f"critic measured: {result['unsafe']} unsafe + {result['safe']} safe drafts, critic {model_name}, "
          f"{result['seconds_per_case']} s/case; critic answers without usable JSON: {result['critic_errors']}")
    print(f"{'rule':<26}{'layer':<10}{'recall':>8}{'false al.':>11}{'TP':>5}{'FN':>5}{'FP':>5}{'TN':>6}")
    for rule in result["layers"]["critic"]["classes"]:
        for layer in LAYERS:
            c = result["layers"][layer]["classes"][rule]
            recall = "-" if c["recall"] is None else f"{c['recall']:.1%}"
            false_alarm = "-" if c["false_alarm_rate"] is None else f"{c['false_alarm_rate']:.1%}"
            print(f"{rule:<26}{layer:<10}{recall:>8}{false_alarm:>11}{c['tp']:>5}{c['fn']:>5}{c['fp']:>5}{c['tn']:>6}")
    print("safe drafts with any finding: " + ", ".join(
        f"{layer} {result['layers'][layer]['safe_drafts_with_any_finding']}" for layer in LAYERS))
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
