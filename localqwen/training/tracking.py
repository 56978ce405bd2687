"""Experiment tracking with SwanLab: local mode by default, so nothing leaves the machine.

Cloud mode only runs when the job config asks for it (``tracking.swanlab = "cloud"``) and the user
has logged in. The same numbers always go to progress.jsonl too, so tracking stays optional.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def swanlab_callback(mode: str, log_dir: Path, project: str, experiment: str | None) -> tuple[Any | None, str]:
    """(a transformers callback or None, a line saying what happened)."""
    if mode == "off":
        return None, "tracking is off"
    try:
        from swanlab.integration.transformers import SwanLabCallback
    except ImportError:
        return None, "SwanLab is not installed (pip install 'localqwen[tracking]'); metrics stay in progress.jsonl"
    log_dir.mkdir(parents=True, exist_ok=True)
    # "offline" writes the run to log_dir and never connects; `swanlab watch DIR` shows it
    # (the dashboard needs `pip install swanboard`), `swanlab sync` can upload it later.
    swan_mode = "online" if mode == "cloud" else "offline"
    callback = SwanLabCallback(project=project, experiment_name=experiment, log_dir=str(log_dir), mode=swan_mode)
    where = "SwanLab cloud" if mode == "cloud" else f"SwanLab local logs in {log_dir}"
    return callback, f"tracking with {where}"


def finish_swanlab() -> None:
    """Close the run so its files are complete (safe when none is open)."""
    try:
        import swanlab

        swanlab.finish()
    except Exception:  # noqa: BLE001 - tracking must never fail a finished job
        pass
