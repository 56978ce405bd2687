"""Consolidation proof on a tiny Qwen3 (issue 14): token recall of synthetic facts after
consolidation, retention after a second batch, general loss, time, hot-swap.

    .venv/bin/python bench/bench_memory_consolidation.py --facts 300          # the full proof
    .venv/bin/python bench/bench_memory_consolidation.py --quick              # 20 facts, a few minutes

Prints the report as JSON (and writes it with --json-out)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))


def main() -> int:
    from localqwen_memory.consolidation.consolidation_eval import run_proof
    from localqwen_memory.consolidation.train import ConsolidationSettings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=300, help="facts per batch")
    parser.add_argument("--quick", action="store_true", help="20 facts, short pretraining, one batch")
    parser.add_argument("--pretrain-steps", type=int, default=300)
    parser.add_argument("--recall-epochs", type=float, default=3.0)
    parser.add_argument("--mix-epochs", type=float, default=40.0)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--max-seconds", type=float, default=600.0, help="time budget per consolidation")
    parser.add_argument("--no-second-batch", action="store_true")
    parser.add_argument("--work", type=Path, default=None, help="folder for the model and adapters (kept)")
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args()
    facts = 20 if args.quick else args.facts
    settings = ConsolidationSettings(recall_epochs=args.recall_epochs, mix_epochs=args.mix_epochs,
                                     learning_rate=args.learning_rate, max_seconds=args.max_seconds, threads=1)
    work = args.work or Path(tempfile.mkdtemp(prefix="lq-consolidation-"))
    report = run_proof(work, facts=facts, settings=settings,
                       pretrain_steps=100 if args.quick else args.pretrain_steps,
                       second_batch=not (args.quick or args.no_second_batch),
                       log=lambda line: print(line, file=sys.stderr, flush=True))
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
