"""CLI start-up: `localqwen --help` wall time / `python -c "import typer"`, measured side by side.

Goal: ratio <= 1.5. Prints medians of interleaved runs so machine noise hits both alike.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(runs: int = 15) -> float:
    exe = shutil.which("localqwen") or ""
    ours_cmd = [exe, "--help"] if exe else [sys.executable, "-m", "localqwen.cli.main", "--help"]
    base_cmd = [sys.executable, "-c", "import typer"]
    _time(ours_cmd), _time(base_cmd)  # warm the file cache
    ours, base = [], []
    for _ in range(runs):
        ours.append(_time(ours_cmd))
        base.append(_time(base_cmd))
    ratio = statistics.median(ours) / statistics.median(base)
    print(f"cli_start: localqwen --help {statistics.median(ours) * 1000:.0f} ms, "
          f"import typer {statistics.median(base) * 1000:.0f} ms, ratio {ratio:.2f} (goal <= 1.5)")
    return ratio


if __name__ == "__main__":
    main()
