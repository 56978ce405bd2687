"""Where jobs are remembered: one SQLite row per job and one JSON-lines event log per job.

The row carries what a job list shows (title, status, progress, summary); the log keeps every
event, so a finished job can be reopened after a restart. A job whose owning process died while
it ran can never finish; :meth:`JobStore.mark_orphans` says so when the next process opens the store.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


class JobStore:
    """The ``jobs`` table and the per-job event logs under ``jobs_dir``."""

    def __init__(self, database: Database, jobs_dir: Path) -> None:
        self.database = database
        self.jobs_dir = jobs_dir
        database.migrate("jobs", MIGRATIONS)

    def log_path(self, job_id: str) -> Path:
        return self.jobs_dir / f"{job_id}.jsonl"

    def insert(self, *, job_id: str, kind: str, title: str, plugin_id: str, action_id: str,
               command: list[str], status: str, created_at: float) -> Path:
        """Record a new job; returns the path of its (not yet written) event log."""
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_path(job_id)
        with self.database.connect() as conn:
            conn.execute(
                "INSERT INTO jobs(id, kind, title, plugin_id, action_id, command, status, owner_pid, created_at,"
                " log_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, kind, title, plugin_id, action_id, json.dumps(command), status, os.getpid(),
                 created_at, str(log_path)),
            )
        return log_path

    def update(self, job_id: str, *, status: str, summary: str, progress: float | None, message: str,
               finished_at: float | None) -> None:
        self.database.connection.execute(
            "UPDATE jobs SET status = ?, summary = ?, progress = ?, message = ?, finished_at = ? WHERE id = ?",
            (status, summary, progress, message, finished_at, job_id),
        )

    def append_event(self, log_path: Path, event: Any) -> None:
        with log_path.open("a", encoding="utf-8") as handle:
            handle.write(event.to_json() + "\n")

    def read_events(self, log_path: Path) -> list[Any]:
        """A job's logged events; a line that is not an event (a torn last write) becomes a Log."""
        if not log_path.exists():
            return []
        return [event_from_line(line) for line in log_path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def list(self, limit: int = 100) -> list[JobRecord]:
        rows = self.database.connection.execute(
            "SELECT * FROM jobs ORDER BY created_at DESC LIMIT ?", (limit,)
        ).fetchall()
        return [_record(row) for row in rows]

    def record(self, job_id: str) -> JobRecord | None:
        row = self.database.connection.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _record(row) if row else None

    def delete(self, record: JobRecord) -> None:
        Path(record.log_path).unlink(missing_ok=True)
        self.database.connection.execute("DELETE FROM jobs WHERE id = ?", (record.id,))

    def mark_orphans(self) -> int:
        """Jobs left "running" by a process that has died can never finish: mark them interrupted."""
        rows = self.database.connection.execute(
            "SELECT id, owner_pid FROM jobs WHERE status IN ('queued', 'running')"
        ).fetchall()
        marked = 0
        for row in rows:
            if row["owner_pid"] != os.getpid() and not _pid_alive(row["owner_pid"]):
                self.database.connection.execute(
                    "UPDATE jobs SET status = 'interrupted', summary = 'the app stopped while it ran',"
                    " finished_at = ? WHERE id = ?",
                    (time.time(), row["id"]),
                )
                marked += 1
        return marked


def event_from_line(line: str) -> Any:
    """One JSON-lines event, or the line as a ``Log`` when it is not one (a command's plain output)."""
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
