"""Dates after relative times in recalled memories vs LoCoMo's temporal answers (issue 14).

    .venv/bin/python bench/bench_memory_relative_dates.py            # all 10 conversations, ~1 s

For each LoCoMo temporal question whose answer names a date, the days it names are compared with
(a) the date its evidence turns were said (what a model shown a memory and its date answers without
help; the baseline, same run) and (b) the dates recall writes after their relative times
(``localqwen_memory.relative_dates``; the said date where a turn has none). Agreement = the days
overlap. Prints JSON: both shares overall and on the questions whose evidence holds a relative time,
with the ratio, and a few misses. No model: this measures the arithmetic, not the answers (the QA
F1 of ``bench_memory_real.py --part qa`` measures those)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    from localqwen_memory.locomo_dates import evaluate_relative_dates
    from localqwen_memory.locomo_eval import default_data, load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--limit", type=int, default=0, help="first N conversations only (0 = all)")
    args = parser.parse_args()
    samples = load(args.data)
    report = evaluate_relative_dates(samples[: args.limit] if args.limit else samples)
    said = report["with_relative_time_said_date_agrees"]
    report["ratio_with_relative_time"] = round(report["with_relative_time_shown_dates_agree"] / said, 2) if said else None
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
