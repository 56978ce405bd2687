"""Profile extraction (issue 13): per-field precision / recall / F1 on the synthetic zh/en dialogues
and on our allergy annotation of HuatuoGPT's Med-dialog_100 (goal F1 >= 0.9).

    .venv/bin/python bench/bench_medical_profile.py                      # rules: 200 dialogues + 100 records, < 1 s
    .venv/bin/python bench/bench_medical_profile.py --real-model --dialogues 2 --med-dialog 6
        # the real instruction model (bench/real_model.py, llama.cpp) extracting, rules filling gaps; slow on a CPU
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "2")


def main(argv: list[str] | None = None) -> dict:
    from localqwen_medical.profile_eval import run_profile_suite

    from localqwen.vocabulary import events as ev

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=200)
    parser.add_argument("--med-dialog", type=int, default=0, help="score only this many Med-dialog records (0 = all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--real-model", action="store_true", help="extract with the real model (llama.cpp)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    engine = None
    if args.real_model:
        from real_model import real_model_path

        from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

        engine = LlamaCppEngine(real_model_path(), n_ctx=2048, n_threads=args.threads)
    done = None
    for event in run_profile_suite(data_dir=args.data_dir, dialogues=args.dialogues, seed=args.seed, engine=engine,
                                   med_dialog_limit=args.med_dialog or None):
        if isinstance(event, ev.Table):
            print(event.title)
            for row in event.rows:
                print("  " + "  ".join(str(c) for c in row))
        elif isinstance(event, ev.Done):
            done = event
    assert done is not None
    result = done.result
    print(json.dumps({k: v for k, v in result.items() if k != "errors"}, ensure_ascii=False))
    for error in result["errors"][:10]:
        print("miss:", json.dumps(error, ensure_ascii=False))
    print(done.summary)
    return result


if __name__ == "__main__":
    main()
