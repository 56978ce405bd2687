"""A live job: its events in memory, its progress bars, its cancel token, and ways to follow it.

Views follow a job at their own pace with :meth:`Job.wait_events` or :func:`paced`; the work
never waits for a screen. :meth:`Job.add` is the one place an event joins a job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.jobs.store import ACTIVE
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import CancelToken


@dataclass
class Job:
    """A running (or finished) job with its events, kept in memory while the process lives."""

    id: str
    kind: str
    title: str
    plugin_id: str = ""
    action_id: str = ""
    command: list[str] = field(default_factory=list)
    status: str = "queued"
    summary: str = ""
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    log_path: Path | None = None
    cancel_token: CancelToken = field(default_factory=CancelToken)
    events: list[Any] = field(default_factory=list)
    progress: dict[str, ev.Progress] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def finished(self) -> bool:
        return self.status not in ACTIVE

    @property
    def fraction(self) -> float | None:
        """Progress of the main bar (or the first one that has a total)."""
        bars = [self.progress.get("main")] + list(self.progress.values())
        for bar in bars:
            if bar is not None and bar.fraction is not None:
                return bar.fraction
        return 1.0 if self.status == "ok" else None

    @property
    def message(self) -> str:
        bar = self.progress.get("main") or next(iter(self.progress.values()), None)
        return bar.message if bar is not None else ""

    def start(self) -> None:
        """Mark the job running (unless it already finished)."""
        with self._cond:
            if not self.finished:
                self.status = "running"

    def add(self, event: Any) -> None:
        """Keep ``event``; a ``Done`` finishes the job. Wakes everyone following it."""
        with self._cond:
            self.events.append(event)
            if isinstance(event, ev.Progress):
                self.progress[event.task] = event
            if isinstance(event, ev.Done):
                self.status = event.status
                self.summary = event.summary
                self.finished_at = time.time()
            self._cond.notify_all()

    def cancel(self, reason: str = "cancelled by user") -> None:
        self.cancel_token.cancel(reason)
        with self._cond:
            self._cond.notify_all()

    def wait_events(self, cursor: int, timeout: float = 0.1) -> tuple[list[Any], int, bool]:
        """Events after ``cursor`` (waiting up to ``timeout`` for some), the new cursor, and
        whether the job has finished and every event has been handed out."""
        with self._cond:
            if cursor >= len(self.events) and not self.finished:
                self._cond.wait(timeout)
            new = self.events[cursor:]
            return new, cursor + len(new), self.finished and cursor + len(new) >= len(self.events)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job finishes; True if it did within ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self.finished:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left if left is not None else 0.5)
        return True


def paced(job: Job, interval: float) -> Iterator[list[Any]]:
    """Batches of a job's events, at most one every ``interval`` seconds (the last one at once)."""
    cursor = 0
    last = 0.0
    while True:
        wait = max(0.0, last + interval - time.monotonic())
        if wait and not job.finished:
            job.wait(wait)  # not sleep: the last batch must come at once when the job ends early
        batch, cursor, finished = job.wait_events(cursor, timeout=interval)
        if batch:
            last = time.monotonic()
            yield batch
        if finished:
            return
