"""The trainer wizard's defaults learn: what a new user gets by accepting every suggestion.

Through the trainer plugin's own steps (the ones the TUI and web wizards run): the tiny random-weight
Qwen3-VL of `localqwen dev tiny-model --vision`, the `synthetic-shapes` data source with its default
options (1,000 training images, 100 held out), the method the model step suggests, the default
("quick") preset, then the evaluate step's exact match on the held-out captions for the base and
the tuned model. Goal: the tuned model clearly above the base (>= 0.25 exact match; the base is 0).

    python bench/bench_wizard_preset.py            # full size (~1-3 minutes on a 2-core CPU)
    python bench/bench_wizard_preset.py --quick    # 300 training images, 40 held out
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "2")

GOAL = 0.25


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller data (a smoke run, not the stated number)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["LOCALQWEN_HOME"] = str(Path(scratch) / "home")
        os.environ.setdefault("LOCALQWEN_PLUGINS", "trainer")
        from localqwen.app import Workbench
        from localqwen.plugin_api import events as ev
        from localqwen.testing.tiny_models import build_tiny_qwen3_vl

        model = build_tiny_qwen3_vl(Path(scratch) / "tiny-vl")  # what `localqwen dev tiny-model --vision` writes
        bench = Workbench.create()
        options = '{"n_train": 300, "n_eval": 40}' if args.quick else "{}"
        started = time.monotonic()

        def step(action: str, **values: object) -> ev.Done:
            events = list(bench.run("trainer", action, values))
            done = events[-1]
            if done.status != "ok":
                raise SystemExit(f"{action} failed: {done.summary}")
            step.events = events  # type: ignore[attr-defined]
            return done

        step("model", model=str(model))
        step("data", source="synthetic-shapes", source_options=options)
        view = bench.host.get("trainer").guided_flow().view("method", "default", bench.context("trainer"))
        method = view.values["method"]  # the suggestion the wizard prefills
        step("method", method=method)
        step("hyperparameters")  # the default preset
        run = step("run")
        train_s = time.monotonic() - started
        done = step("evaluate", max_rows=100, compare_rows=3, max_new_tokens=16)
        base, tuned = done.result["base_exact_match"], done.result["exact_match"]
        print(f"wizard defaults: method {method}, preset quick -> {run.summary}")
        print(f"exact match on held-out captions: base {base:.2f} -> tuned {tuned:.2f} (goal >= {GOAL}); "
              f"{train_s:.0f} s to train, {time.monotonic() - started:.0f} s with evaluation")
        compare = next(e for e in step.events if isinstance(e, ev.Table) and e.title == "Base vs tuned")  # type: ignore[attr-defined]
        for row in compare.rows:
            print(f"   expected {row[1]!r}: base {row[2]!r}, tuned {row[3]!r}")
        return {"base_exact_match": base, "tuned_exact_match": tuned, "goal_ratio": tuned / GOAL}


if __name__ == "__main__":
    main()
