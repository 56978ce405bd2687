"""Load a script under bench/ as a module, so a test can run its short version or its helpers
(the scripts are not a package: each runs as ``python bench/<name>.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def bench_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no bench script {name}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
