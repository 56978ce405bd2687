"""When consolidation is due: ``[plugins.memory] consolidate_every = "3d"`` (units m, h, d, w).

The app does not run in the background when it is closed: a consolidation that fell due while
it was not running runs at the next start (``is_due`` is true as soon as the interval since the
last run has passed, however long ago that was), once, not once per missed interval.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 604800}
_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$", re.IGNORECASE)


def parse_every(text: str) -> float | None:
    """Seconds between consolidations; empty or "off" -> None (on demand only)."""
    if not text or text.strip().lower() in ("off", "never", "0"):
        return None
    match = _EVERY.match(text)
    if match is None:
        raise ValueError(f"consolidate_every must look like 30m, 12h, 3d or 1w (or off), got {text!r}")
    seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if seconds < 60:
        raise ValueError(f"consolidate_every must be at least a minute, got {text!r}")
    return seconds


def last_run(state_file: Path) -> float | None:
    try:
        return float(json.loads(state_file.read_text(encoding="utf-8"))["finished_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_due(every: str, state_file: Path, *, now: float | None = None) -> bool:
    """Overdue or never run (with a schedule set)."""
    seconds = parse_every(every)
    if seconds is None:
        return False
    previous = last_run(state_file)
    return previous is None or (now if now is not None else time.time()) - previous >= seconds
