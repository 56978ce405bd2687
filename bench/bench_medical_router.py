"""The medical intent router (issue 13): 100 KUAKE-QIC queries (medical), 100 MedQA USMLE vignettes
(complex) and 100 zh/en chit-chat lines written for the suite (chat); macro-F1, per-label scores
and the confusion matrix.

    python bench/bench_medical_router.py                   # rules only, 300 items, about a second
    python bench/bench_medical_router.py --real --limit 30 # the real 1.5B instruct model as router (slow on a CPU)

The chit-chat was written by the same people who wrote the rules' cue lists, so its score shows the
rules do not fire on everyday talk like it; the KUAKE-QIC and MedQA parts are third-party data.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: ../shared/data")
    parser.add_argument("--limit", type=int, default=0, help="route only this many items, spread evenly")
    parser.add_argument("--real", action="store_true", help="ask the real instruct model (bench/real_model.py)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the result dict here")
    args = parser.parse_args()

    from localqwen_medical.chat import ModelLLM
    from localqwen_medical.plugin import _spread
    from localqwen_medical.router_suite import evaluate_router, load_suite

    items = load_suite(args.data_dir)
    if args.limit:
        items = _spread(items, args.limit)
    llm = None
    if args.real:
        from real_model import real_model_path

        from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

        llm = ModelLLM(LlamaCppEngine(real_model_path(), n_ctx=2048, n_threads=args.threads), max_new_tokens=32)
    report = evaluate_router(items, llm)
    shown = {k: v for k, v in report.items() if k != "errors"}
    print(json.dumps(shown, indent=2, ensure_ascii=False))
    for error in report["errors"][:10]:
        print(f"  miss: {error['gold']} -> {error['predicted']}: {error['text'][:80]}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
