"""Jobs: long work that outlives the view that started it.

A job is either a plugin action's event stream run in a background thread, or a subprocess
command that prints one JSON event per line (``localqwen train CONFIG``, ``localqwen run ... --json``).
The manager keeps every job's events in memory for live views, appends them to a JSON-lines log
under ``runs/jobs/`` so a finished job can be reopened after a restart, and records each job in
SQLite. Cancelling sets the job's :class:`CancelToken`; a command gets SIGTERM (then SIGKILL).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.vocabulary.cancel import Cancelled, CancelToken
from localqwen.vocabulary import events as ev

if TYPE_CHECKING:
    from localqwen.storage.database import Database

MIGRATIONS = [
    """CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        title TEXT NOT NULL,
        plugin_id TEXT NOT NULL DEFAULT '',
        action_id TEXT NOT NULL DEFAULT '',
        command TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        progress REAL,
        message TEXT NOT NULL DEFAULT '',
        owner_pid INTEGER NOT NULL,
        created_at REAL NOT NULL,
        finished_at REAL,
        log_path TEXT NOT NULL
    )""",
    "CREATE INDEX jobs_created ON jobs(created_at DESC)",
]

ACTIVE = ("queued", "running")
TERMINATE_GRACE_S = 10.0
_PROGRESS_SAVE_INTERVAL_S = 0.5


@dataclass
class JobRecord:
    """A job as stored in SQLite (live or from an earlier run)."""

    id: str
    kind: str
    title: str
    plugin_id: str
    action_id: str
    status: str
    summary: str
    progress: float | None
    message: str
    created_at: float
    finished_at: float | None
    log_path: str

    @property
    def finished(self) -> bool:
        return self.status not in ACTIVE


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


class JobManager:
    def __init__(self, database: Database, jobs_dir: Path) -> None:
        self.database = database
        self.jobs_dir = jobs_dir
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._last_saved: dict[str, float] = {}
        database.migrate("jobs", MIGRATIONS)
        self._mark_orphans()

    # -- starting -----------------------------------------------------------------------------
    def start_stream(self, title: str, make_events: Callable[[CancelToken], Iterator[Any]], *,
                     plugin_id: str = "", action_id: str = "") -> Job:
        """Run any event generator (an action, a download, an indexing pass) as a job; it gets the
        job's token. Plugin actions come here through ``Workbench.start_action``."""
        job = self._new_job("action" if action_id else "stream", title, plugin_id=plugin_id, action_id=action_id)

        def guarded() -> Iterator[Any]:
            start = time.monotonic()
            try:
                for event in make_events(job.cancel_token):
                    yield event
                    if isinstance(event, ev.Done):
                        return
                    if job.cancel_token.cancelled:
                        raise Cancelled(job.cancel_token.reason)
                yield ev.Done(elapsed_s=time.monotonic() - start)
            except Cancelled as exc:
                yield ev.Done(status="cancelled", summary=str(exc), elapsed_s=time.monotonic() - start)
            except Exception as exc:
                yield ev.Error(message=f"{type(exc).__name__}: {exc}")
                yield ev.Done(status="failed", summary=str(exc), elapsed_s=time.monotonic() - start)

        threading.Thread(target=self._drive, args=(job, guarded()), name=f"job-{job.id}", daemon=True).start()
        return job

    def start_command(self, argv: Sequence[str], *, title: str, cwd: Path | None = None,
                      env: Mapping[str, str] | None = None) -> Job:
        """Run a command that prints JSON-lines events; other output lines become Log events."""
        job = self._new_job("command", title, command=[str(a) for a in argv])
        try:
            process = subprocess.Popen(
                job.command, cwd=cwd, env=dict(env) if env is not None else None,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                text=True, encoding="utf-8", errors="replace", bufsize=1,
                start_new_session=os.name == "posix",  # so cancel can stop its children too
            )
        except OSError as exc:
            self._add(job, ev.Error(message=f"could not start {job.command[0]}: {exc}"))
            self._add(job, ev.Done(status="failed", summary=str(exc)))
            return job
        threading.Thread(target=self._watch_cancel, args=(job, process), daemon=True).start()
        threading.Thread(target=self._drive_process, args=(job, process), name=f"job-{job.id}",
                         daemon=True).start()
        return job

    def _new_job(self, kind: str, title: str, **extra: Any) -> Job:
        job_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        job = Job(id=job_id, kind=kind, title=title, log_path=self.jobs_dir / f"{job_id}.jsonl", **extra)
        with self._lock:
            self._jobs[job_id] = job
        with self.database.connect() as conn:
            conn.execute(
                "INSERT INTO jobs(id, kind, title, plugin_id, action_id, command, status, owner_pid, created_at,"
                " log_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (job.id, kind, title, job.plugin_id, job.action_id, json.dumps(job.command), job.status,
                 os.getpid(), job.created_at, str(job.log_path)),
            )
        return job

    # -- running ------------------------------------------------------------------------------
    def _drive(self, job: Job, stream: Any) -> None:
        self._set_status(job, "running")
        try:
            for event in stream:
                self._add(job, event)
        except Exception as exc:  # run_action already turns action errors into events; this is a last guard
            self._add(job, ev.Error(message=f"{type(exc).__name__}: {exc}"))
            self._add(job, ev.Done(status="failed", summary=str(exc)))
        if not job.finished:
            self._add(job, ev.Done(status="failed", summary="the action ended without finishing"))

    def _drive_process(self, job: Job, process: subprocess.Popen[str]) -> None:
        self._set_status(job, "running")
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            event = _parse_line(line)
            if isinstance(event, ev.Done):
                if job.cancel_token.cancelled and event.status == "ok":
                    event = event.model_copy(update={"status": "cancelled"})
                self._add(job, event)
            elif not job.finished:
                self._add(job, event)
        code = process.wait()
        if not job.finished:
            if job.cancel_token.cancelled:
                done = ev.Done(status="cancelled", summary=job.cancel_token.reason)
            elif code == 0:
                done = ev.Done(status="ok")
            else:
                done = ev.Done(status="failed", summary=f"exit code {code}")
            self._add(job, done)

    def _watch_cancel(self, job: Job, process: subprocess.Popen[str]) -> None:
        while process.poll() is None:
            if job.cancel_token.wait(0.2):
                _terminate(process)
                return

    def _add(self, job: Job, event: Any) -> None:
        if job.log_path is not None:
            with job.log_path.open("a", encoding="utf-8") as handle:
                handle.write(event.to_json() + "\n")
        if isinstance(event, ev.Done):
            # Record the end in SQLite before anyone waiting on the job is woken.
            self._save(job, status=event.status, summary=event.summary, finished_at=time.time())
        with job._cond:
            job.events.append(event)
            if isinstance(event, ev.Progress):
                job.progress[event.task] = event
            if isinstance(event, ev.Done):
                job.status = event.status
                job.summary = event.summary
                job.finished_at = time.time()
            job._cond.notify_all()
        if isinstance(event, ev.Progress):
            now = time.monotonic()
            if now - self._last_saved.get(job.id, 0.0) >= _PROGRESS_SAVE_INTERVAL_S:
                self._last_saved[job.id] = now
                self._save(job)

    def _set_status(self, job: Job, status: str) -> None:
        with job._cond:
            if job.finished:
                return
            job.status = status
        self._save(job)

    def _save(self, job: Job, *, status: str | None = None, summary: str | None = None,
              finished_at: float | None = None) -> None:
        fraction = job.fraction
        if status == "ok" and fraction is None:
            fraction = 1.0
        self.database.connection.execute(
            "UPDATE jobs SET status = ?, summary = ?, progress = ?, message = ?, finished_at = ? WHERE id = ?",
            (status or job.status, job.summary if summary is None else summary, fraction, job.message,
             finished_at or job.finished_at, job.id),
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
        rows = self.database.connection.execute(
            "SELECT * FROM jobs ORDER BY created_at DESC LIMIT ?", (limit,)
        ).fetchall()
        return [_record(row) for row in rows]

    def record(self, job_id: str) -> JobRecord | None:
        row = self.database.connection.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _record(row) if row else None

    def events(self, job_id: str) -> list[Any]:
        """All events of a job: from memory when live, else from its JSON-lines log."""
        job = self._jobs.get(job_id)
        if job is not None:
            with job._cond:
                return list(job.events)
        record = self.record(job_id)
        if record is None:
            raise KeyError(f"no job '{job_id}'")
        path = Path(record.log_path)
        if not path.exists():
            return []
        return [_parse_line(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def forget_finished(self) -> int:
        """Delete finished job records and logs; returns how many were removed."""
        removed = 0
        for record in self.list(limit=100_000):
            if record.finished:
                Path(record.log_path).unlink(missing_ok=True)
                self.database.connection.execute("DELETE FROM jobs WHERE id = ?", (record.id,))
                self._jobs.pop(record.id, None)
                removed += 1
        return removed

    def _mark_orphans(self) -> None:
        """Jobs left "running" by a process that has died can never finish: say so."""
        rows = self.database.connection.execute(
            "SELECT id, owner_pid FROM jobs WHERE status IN ('queued', 'running')"
        ).fetchall()
        for row in rows:
            if row["owner_pid"] != os.getpid() and not _pid_alive(row["owner_pid"]):
                self.database.connection.execute(
                    "UPDATE jobs SET status = 'interrupted', summary = 'the app stopped while it ran' WHERE id = ?",
                    (row["id"],),
                )


def run_in_background(events: Iterator[Any], cancel: CancelToken | None = None) -> Job:
    """Iterate ``events`` in a thread and keep them on an unrecorded :class:`Job`, so a view can
    follow it with ``wait_events`` at its own pace (the producer never waits for the screen)."""
    job = Job(id=uuid.uuid4().hex[:8], kind="stream", title="", cancel_token=cancel or CancelToken())

    def drive() -> None:
        with job._cond:
            job.status = "running"
        last: Any = None
        try:
            for event in events:
                last = event
                with job._cond:
                    job.events.append(event)
                    job._cond.notify_all()
        except Exception as exc:  # surfaced to the view as an event, like a job's failure
            last = ev.Done(status="failed", summary=f"{type(exc).__name__}: {exc}")
            with job._cond:
                job.events.extend([ev.Error(message=last.summary), last])
        with job._cond:
            job.status = last.status if isinstance(last, ev.Done) else "ok"
            job._cond.notify_all()

    threading.Thread(target=drive, name=f"stream-{job.id}", daemon=True).start()
    return job


def paced(job: Job, interval: float) -> Iterator[list[Any]]:
    """Batches of a job's events, at most one every ``interval`` seconds (the last one at once)."""
    cursor = 0
    last = 0.0
    while True:
        wait = max(0.0, last + interval - time.monotonic())
        if wait and not job.finished:
            time.sleep(wait)
        batch, cursor, finished = job.wait_events(cursor, timeout=interval)
        if batch:
            last = time.monotonic()
            yield batch
        if finished:
            return


def _parse_line(line: str) -> Any:
    try:
        return ev.event_from_json(line)
    except ValueError:
        return ev.Log(message=line)


def _record(row: Any) -> JobRecord:
    return JobRecord(
        id=row["id"], kind=row["kind"], title=row["title"], plugin_id=row["plugin_id"],
        action_id=row["action_id"], status=row["status"], summary=row["summary"], progress=row["progress"],
        message=row["message"], created_at=row["created_at"], finished_at=row["finished_at"],
        log_path=row["log_path"],
    )


def _terminate(process: subprocess.Popen[str]) -> None:
    def send(sig: int) -> None:
        try:
            if os.name == "posix":
                os.killpg(process.pid, sig)
            else:  # pragma: no cover - Windows has no process groups here
                process.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    send(signal.SIGTERM)
    try:
        process.wait(TERMINATE_GRACE_S)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL if os.name == "posix" else signal.SIGTERM)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
