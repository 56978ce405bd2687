"""The DPO proof of issue 13: medical-dpo pairs from audited chat runs teach a tiny Qwen3 (built
from a config, LoRA through the project's DPO job) to prefer the answer that passed the audit.

Prints the runs simulated, the pairs, the held-out preference accuracy (DPO reward margin > 0;
goal >= 90%), the mean margin, and "chosen more likely than rejected" before and after.

    .venv/bin/python bench/bench_medical_dpo.py            # 3 epochs, ~2 minutes on a busy 2-core CPU
    .venv/bin/python bench/bench_medical_dpo.py --quick    # 2 epochs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "2")


def main(argv: list[str] | None = None) -> dict:
    from localqwen_medical.dpo_proof import DpoProofSizes, run_dpo_proof

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 epochs instead of 3")
    parser.add_argument("--epochs", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sizes = DpoProofSizes(epochs=args.epochs or (2.0 if args.quick else 3.0), seed=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        result = run_dpo_proof(Path(tmp), sizes)
    print(json.dumps(result, indent=1))
    verdict = "PASS" if result["margin_accuracy"] >= 0.9 else "FAIL"
    print(f"held-out preference accuracy (reward margin > 0): {result['margin_accuracy']:.1%} "
          f"(goal >= 90%: {verdict}); mean margin {result['mean_margin']:.3f}; chosen more likely than rejected: "
          f"{result['preference_accuracy_before']:.1%} before -> {result['preference_accuracy_after']:.1%} after")
    return result


if __name__ == "__main__":
    main()
