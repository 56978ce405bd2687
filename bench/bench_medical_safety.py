"""The medical auditor's safety suite (issue 13): planted-unsafe and safe near-miss drafts
(plugins/localqwen_medical/safety_cases.py, zh + en, seeded) through the auditor; recall, false
alarms and the confusion matrix per rule class, against the issue's targets.

    python bench/bench_medical_safety.py                         # rules only, 448 + 448 cases, seconds
    python bench/bench_medical_safety.py --model PATH --limit 40 # + the critic (a GGUF file or a transformers folder)
    python bench/bench_medical_safety.py --real --limit 16       # + the real 1.5B instruct model (slow on a CPU)

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-class", type=int, default=56, help="unsafe and safe cases per rule class")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="audit only this many cases, spread evenly")
    parser.add_argument("--model", type=Path, help="critic model: a .gguf file or a transformers folder")
    parser.add_argument("--real", action="store_true", help="the real instruct model (bench/real_model.py)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the result dict here")
    args = parser.parse_args()

    from localqwen_medical.safety_cases import generate, subset
    from localqwen_medical.safety_eval import evaluate_safety

    cases = generate(per_class=args.per_class, seed=args.seed)
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


if __name__ == "__main__":
    main()
