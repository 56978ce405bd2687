"""Run every benchmark under bench/ (or those matching the arguments), each in its own process.

Each script prints its own ratio against a baseline measured in the same run.
    python bench/run_all.py               # all
    python bench/run_all.py cli rag       # names containing "cli" or "rag"
    python bench/run_all.py --real        # also those that need the real 1.1 GB model (slow on a CPU)

A script that needs the real instruction model (bench/real_model.py) says ``NEEDS_REAL_MODEL = True``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    real = "--real" in argv
    argv = [word for word in argv if word != "--real"]
    scripts = sorted(HERE.glob("bench_*.py"))
    if not real:
        scripts = [s for s in scripts if "NEEDS_REAL_MODEL = True" not in s.read_text(encoding="utf-8")]
    if argv:
        scripts = [s for s in scripts if any(word in s.stem for word in argv)]
    failures = 0
    for script in scripts:
        print(f"== {script.stem}", flush=True)
        start = time.perf_counter()
        result = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        print(f"   ({time.perf_counter() - start:.0f} s, exit {result.returncode})", flush=True)
        failures += result.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
