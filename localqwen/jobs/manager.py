"""The job manager: start work as a job, follow it live, find it again after a restart.

Two kinds of work become jobs: an event stream run in a background thread (a plugin action, a
download, an indexing pass; see ``thread_runner``) and a command that prints JSON-lines events
(see ``process_runner``). Both end with exactly one ``Done`` through ``finish_once``. Every event
is kept in memory for live views and appended to the job's log; the job's row in SQLite follows
its status and progress (see ``store``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.jobs.job import Job
from localqwen.jobs.process_runner import TERMINATE_GRACE_S, command_events
from localqwen.jobs.store import JobRecord, JobStore
from localqwen.jobs.thread_runner import run_in_thread
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import CancelToken

if TYPE_CHECKING:
    from localqwen.storage.database import Database

_PROGRESS_SAVE_INTERVAL_S = 0.5


class JobManager:
    def __init__(self, database: Database, jobs_dir: Path) -> None:
        self.store = JobStore(database, jobs_dir)
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._last_saved: dict[str, float] = {}
        self.store.mark_orphans()

    # -- starting -----------------------------------------------------------------------------
    def start_stream(self, title: str, make_events: Callable[[CancelToken], Iterable[Any]], *,
                     plugin_id: str = "", action_id: str = "") -> Job:
        """Run any event generator (an action, a download, an indexing pass) as a job; it gets the
        job's token. Plugin actions come here through ``Workbench.start_action``."""
        job = self._new_job("action" if action_id else "stream", title, plugin_id=plugin_id, action_id=action_id)
        self._run(job, lambda: make_events(job.cancel_token), cancel=job.cancel_token)
        return job

    def start_command(self, argv: Sequence[str | Path], *, title: str, cwd: Path | None = None,
                      env: Mapping[str, str] | None = None, stderr_path: Path | None = None,
                      grace_s: float = TERMINATE_GRACE_S) -> Job:
        """Run a command that prints JSON-lines events (other output lines become ``Log`` events);
        cancelling stops it with SIGTERM, then SIGKILL after ``grace_s``."""
        job = self._new_job("command", title, command=[str(a) for a in argv])
        # The process runner does the cancelling (SIGTERM, then the command's own ending), so the
        # command's last words (its Done, e.g. "checkpoint kept") are never cut off by the wrapper.
        self._run(job, lambda: command_events(job.command, job.cancel_token, cwd=cwd, env=env,
                                              stderr_path=stderr_path, grace_s=grace_s), cancel=None)
        return job

    def _new_job(self, kind: str, title: str, **extra: Any) -> Job:
        job_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        job = Job(id=job_id, kind=kind, title=title, **extra)
        job.log_path = self.store.insert(job_id=job.id, kind=kind, title=title, plugin_id=job.plugin_id,
                                         action_id=job.action_id, command=job.command, status=job.status,
                                         created_at=job.created_at)
        with self._lock:
            self._jobs[job_id] = job
        return job

    def _run(self, job: Job, make_events: Callable[[], Iterable[Any]], *, cancel: CancelToken | None) -> None:
        job.start()
        self._save(job)
        run_in_thread(make_events, lambda event: self._record(job, event), cancel=cancel, name=f"job-{job.id}")

    # -- recording ------------------------------------------------------------------------------
    def _record(self, job: Job, event: Any) -> None:
        if job.log_path is not None:
            self.store.append_event(job.log_path, event)
        if isinstance(event, ev.Done):
            # Record the end in SQLite before anyone waiting on the job is woken.
            self._save(job, done=event)
        job.add(event)
        if isinstance(event, ev.Progress):
            now = time.monotonic()
            if now - self._last_saved.get(job.id, 0.0) >= _PROGRESS_SAVE_INTERVAL_S:
                self._last_saved[job.id] = now
                self._save(job)

    def _save(self, job: Job, *, done: ev.Done | None = None) -> None:
        fraction = job.fraction
        if done is not None and done.status == "ok" and fraction is None:
            fraction = 1.0
        self.store.update(
            job.id, status=done.status if done else job.status, summary=done.summary if done else job.summary,
            progress=fraction, message=job.message, finished_at=time.time() if done else job.finished_at,
        )

    # -- looking --------------------------------------------------------------------------------
    def get(self, job_id: str) -> Job | None:
        """The live job (started by this process), or None."""
        return self._jobs.get(job_id)

    def cancel(self, job_id: str, reason: str = "cancelled by user") -> bool:
        job = self._jobs.get(job_id)
        if job is None or job.finished:
            return False
        job.cancel(reason)
        return True

    def list(self, limit: int = 100) -> list[JobRecord]:
        """Recent jobs, newest first; live jobs show their current progress."""
        for job in list(self._jobs.values()):
            if not job.finished:
                self._save(job)
        return self.store.list(limit)

    def record(self, job_id: str) -> JobRecord | None:
        return self.store.record(job_id)

    def events(self, job_id: str) -> list[Any]:
        """All events of a job: from memory when live, else from its JSON-lines log."""
        job = self._jobs.get(job_id)
        if job is not None:
            return list(job.events)
        record = self.store.record(job_id)
        if record is None:
            raise KeyError(f"no job '{job_id}'")
        return self.store.read_events(Path(record.log_path))

    def forget_finished(self) -> int:
        """Delete finished job records and logs; returns how many were removed."""
        removed = 0
        for record in self.list(limit=100_000):
            if record.finished:
                self.store.delete(record)
                self._jobs.pop(record.id, None)
                removed += 1
        return removed


def run_in_background(events: Iterable[Any], cancel: CancelToken | None = None) -> Job:
    """Iterate ``events`` in a thread and keep them on an unrecorded :class:`Job`, so a view can
    follow it with ``wait_events`` at its own pace (the producer never waits for the screen)."""
    job = Job(id=uuid.uuid4().hex[:8], kind="stream", title="", cancel_token=cancel or CancelToken())
    job.start()
    run_in_thread(lambda: events, job.add, cancel=job.cancel_token, name=f"stream-{job.id}")
    return job
