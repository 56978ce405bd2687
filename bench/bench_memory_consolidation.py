"""Consolidation proof on a tiny Qwen3 (issue 14): token recall of synthetic facts after
consolidation, retention after a second batch, general loss, time, hot-swap.

    .venv/bin/python bench/bench_memory_consolidation.py --facts 300          # the full proof (~25 min)
    .venv/bin/python bench/bench_memory_consolidation.py --quick              # 20 facts, ~4 minutes

The tiny model is pretrained once per --work folder (300 steps of general rows, ~1-2 min) and
reused; --quick trains 10 recall and 120 mix epochs (20 facts: ~300 steps), the full proof 2 and
40 (300 facts: 1,744 steps, 381 s on a quiet moment; --max-seconds cuts it on a busier CPU).

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
    parser.add_argument("--quick", action="store_true", help="20 facts, one batch, more epochs")
    parser.add_argument("--pretrain-steps", type=int, default=300)
    parser.add_argument("--recall-epochs", type=float, default=None, help="default: 10 with --quick, else 3")
    parser.add_argument("--mix-epochs", type=float, default=None, help="default: 120 with --quick, else 40")
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--max-seconds", type=float, default=600.0, help="time budget per consolidation")
    parser.add_argument("--no-second-batch", action="store_true")
    parser.add_argument("--work", type=Path, default=None, help="folder for the model and adapters (kept)")
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument("--embedder", default=None,
                        help="the facts' embedder (default: memory_head.KEY_EMBEDDER, MiniLM, as the chat's "
                             "consolidation keys memories)")
    args = parser.parse_args()
    facts = 20 if args.quick else args.facts
    recall_epochs = args.recall_epochs if args.recall_epochs is not None else (10.0 if args.quick else 3.0)
    mix_epochs = args.mix_epochs if args.mix_epochs is not None else (120.0 if args.quick else 40.0)
    settings = ConsolidationSettings(recall_epochs=recall_epochs, mix_epochs=mix_epochs,
                                     learning_rate=args.learning_rate, max_seconds=args.max_seconds, threads=1)
    work = args.work or Path(tempfile.mkdtemp(prefix="lq-consolidation-"))
    report = run_proof(work, facts=facts, settings=settings,
                       pretrain_steps=args.pretrain_steps,  # 100 steps left the model unable to copy a name
                       second_batch=not (args.quick or args.no_second_batch), embedder=args.embedder,
                       log=lambda line: print(line, file=sys.stderr, flush=True))
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
