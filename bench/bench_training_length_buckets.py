"""Why safari trains on random batches: length buckets of templated rows are batches of one answer.

The trainer's ``batching = "bucket"`` hands transformers' ``LengthGroupedSampler`` a length per row
and gets batches of rows of about the same length (less padding). In templated rows the length is
decided by the few words that differ between rows (the species asked, the decision's kind), so a
bucket holds rows with one answer, and a small model learns to give each batch its answer instead
of reading the prompt. Found in November 2026: the bucket lengths were the row's JSON character
count then, and a tiny Qwen3-VL trained 2,500 steps on safari's grounding questions ("Where is the
zebra?") named the asked species in 29% of its held-out answers (chance: 25%), against 100% after
2,000 steps on random batches (README, "Random batches, not length buckets"; those runs were probe
scripts, this bench measures the mechanism behind them).

What it measures, with the trainer's own sampler on rows written by the safari data source:

* ``purity``: in each batch, the share of its rows whose answer is the batch's most common answer
  (1.0: the batch is one answer), averaged over batches; beside it, the same for random batches,
  drawn in the same run from the same rows, and the ratio;
* for three lengths: the JSON character count (what buckets used before the fix), the token count
  the trainer now uses (``ChatCollator.count_tokens`` with the tiny model's processor: images
  included), and none (random batches, the baseline);
* on two row sets: the grounding questions (answer: the species asked) and the expert's replies
  (answer: the decision's calls, a move with its direction).

    .venv/bin/python bench/bench_training_length_buckets.py            # ~15 s
    .venv/bin/python bench/bench_training_length_buckets.py --episodes 400 --json /tmp/buckets.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "plugins"))

_ASKED = re.compile(r"Where is the (\w+)\?")


def answer_of(row: dict[str, Any]) -> str:
    """What a row teaches, as one label: the species a question asks about, or a reply's calls
    (a move with its direction)."""
    user = row["messages"][-2]["content"]
    texts = [part.get("text", "") for part in user if isinstance(part, dict)] if isinstance(user, list) else [user]
    asked = next((m.group(1) for m in map(_ASKED.search, texts) if m), None)
    if asked:
        return asked
    calls = row["messages"][-1].get("tool_calls") or []
    return " + ".join(_call_label(call["function"]) for call in calls) or "no call"


def _call_label(function: dict[str, Any]) -> str:
    arguments = function.get("arguments") or {}
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    return f"{function['name']} {arguments.get('direction', '')}".strip()


def batches(order: list[int], batch_size: int) -> list[list[int]]:
    return [order[i:i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]


def purity(labels: list[str], order: list[int], batch_size: int) -> float:
    """Mean share of a batch taken by its most common label."""
    shares = [Counter(labels[i] for i in batch).most_common(1)[0][1] / len(batch) for batch in batches(order, batch_size)]
    return sum(shares) / len(shares)


def sampler_order(rows: int, lengths: list[int] | None, batch_size: int, seed: int) -> list[int]:
    """The order the trainer's sampler visits ``rows`` rows in: transformers' LengthGroupedSampler for
    buckets (``train_sampling_strategy = "group_by_length"``), a random permutation without lengths."""
    import torch
    from transformers.trainer_pt_utils import LengthGroupedSampler

    generator = torch.Generator().manual_seed(seed)
    if lengths is None:
        return torch.randperm(rows, generator=generator).tolist()
    return [int(i) for i in LengthGroupedSampler(batch_size, lengths=lengths, generator=generator)]


def measure(rows: list[dict[str, Any]], count_tokens: Any, batch_size: int, seeds: int) -> dict[str, Any]:
    labels = [answer_of(row) for row in rows]
    lengths = {"characters (before the fix)": [len(json.dumps(row)) for row in rows],
               "tokens (the trainer now)": [count_tokens(row) for row in rows]}

    def mean_purity(lengths_or_none: list[int] | None) -> float:
        return sum(purity(labels, sampler_order(len(rows), lengths_or_none, batch_size, seed), batch_size)
                   for seed in range(seeds)) / seeds

    random_purity = mean_purity(None)
    result: dict[str, Any] = {"rows": len(rows), "answers": len(set(labels)),
                              "most_common_answer_share": Counter(labels).most_common(1)[0][1] / len(rows),
                              "random batches": {"purity": random_purity}}
    for name, values in lengths.items():
        value = mean_purity(values)
        result[name] = {"purity": value, "ratio_to_random": value / random_purity,
                        "distinct_lengths": len(set(values))}
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=60, help="expert episodes the rows come from")
    parser.add_argument("--batch-size", type=int, default=8, help="the safari bench's batch size")
    parser.add_argument("--seeds", type=int, default=5, help="sampler seeds averaged")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    from localqwen_safari.dataset import CONVERSATIONS_FILE, GROUNDING_FILE, generate
    from localqwen_safari.learning import build_tiny_model
    from transformers import AutoProcessor

    from localqwen.training.collator import ChatCollator
    from localqwen.training.data import read_rows

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="length_buckets_") as folder:
        data = Path(folder) / "data"
        for _ in generate(data, args.episodes, prompt="compact", grounding=2, grounding_apart=True):
            pass
        collator = ChatCollator(AutoProcessor.from_pretrained(build_tiny_model(Path(folder) / "model")))
        report: dict[str, Any] = {"episodes": args.episodes, "batch_size": args.batch_size, "seeds": args.seeds}
        for name, file in (("grounding questions", GROUNDING_FILE), ("expert replies", CONVERSATIONS_FILE)):
            report[name] = measure(read_rows(data / file), collator.count_tokens, args.batch_size, args.seeds)
    report["seconds"] = round(time.monotonic() - started, 1)

    print(f"batch purity (share of a batch with its most common answer), batch {args.batch_size}, "
          f"{args.seeds} sampler seeds, rows from {args.episodes} expert episodes:")
    for name in ("grounding questions", "expert replies"):
        part = report[name]
        print(f"  {name}: {part['rows']} rows, {part['answers']} answers "
              f"(the commonest {part['most_common_answer_share']:.0%})")
        print(f"    {'random batches (baseline)':42} {part['random batches']['purity']:.3f}")
        for key in ("characters (before the fix)", "tokens (the trainer now)"):
            print(f"    {'buckets by ' + key:42} {part[key]['purity']:.3f}  x{part[key]['ratio_to_random']:.2f} "
                  f"of random ({part[key]['distinct_lengths']} distinct lengths)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
