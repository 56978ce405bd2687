"""Where a training job's events go: ``progress.jsonl`` and, with ``--json``, stdout.

The training process is the only writer of ``progress.jsonl``; a follower (the trainer plugin,
the job manager) reads the same events as JSON lines on the process's stdout. With several GPUs
only the main process (rank 0) writes, so each event appears once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from localqwen.vocabulary import events as ev

EventSink = Callable[[Any], None]


def is_main_process() -> bool:
    """True unless this is a non-zero rank of a distributed (`accelerate launch`) job."""
    return os.environ.get("RANK", "0") == "0"


class EventLog:
    """Writes each event as a JSON line to ``path`` and hands it to ``echo`` (the terminal or stdout).

    ``enabled=False`` (a non-main rank) drops every event, so ranks other than 0 write nothing.
    """

    def __init__(self, path: Path, echo: EventSink | None = None, *, append: bool = False,
                 enabled: bool = True) -> None:
        self.path = path
        self.echo = echo
        self.enabled = enabled
        self._handle = None
        if enabled:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = path.open("a" if append else "w", encoding="utf-8")

    def __call__(self, event: Any) -> None:
        if self._handle is None:
            return
        self._handle.write(event.to_json() + "\n")
        self._handle.flush()
        if self.echo is not None:
            self.echo(event)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def read_progress(path: Path) -> list[Any]:
    """Parse a progress log back into events (skips a half-written last line)."""
    found: list[Any] = []
    if not path.exists():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                found.append(ev.event_from_json(line))
            except ValueError:
                continue
    return found


def json_stdout_echo() -> EventSink:
    """Events go to the real stdout; anything libraries print is moved to stderr, so stdout stays JSON."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)

    def echo(event: Any) -> None:
        out.write(event.to_json() + "\n")
        out.flush()

    return echo
