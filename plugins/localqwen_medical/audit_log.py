"""The audit log: one JSON line per audit (which case, which layers ran, the findings, the
verdict, when), appended under the plugin's data folder and read back by the UI (``/audit-log``).

Each record is written with a single ``write`` on a file opened for appending, so concurrent
audits (the API server serves several users) never interleave inside a line, and a crash
leaves at most one torn last line, which ``read`` skips.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from localqwen_medical.case import AuditCase
from localqwen_medical.findings import AuditReport

LOG_NAME = "audit_log.jsonl"
_LOCK = threading.Lock()


def case_digest(case: AuditCase) -> str:
    """A short stable id of the audited content (same case -> same digest)."""
    canonical = json.dumps(case.to_dict(), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


class AuditLog:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    @classmethod
    def in_folder(cls, data_dir: str | Path) -> AuditLog:
        return cls(Path(data_dir) / LOG_NAME)

    def append(self, case: AuditCase, report: AuditReport, *, source: str = "audit",
               round: int | None = None) -> dict[str, Any]:  # noqa: A002 - "round" is the refine round
        """Record one audit; ``source`` says who asked (the audit action, the chat's draft/refine)."""
        record = {
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "case": case_digest(case),
            "source": source,
            "round": round,
            "question": case.question,
            "draft": case.draft,  # whole: the medical-sft / medical-dpo sources train on it
            "verdict": report.verdict,
            "layers": list(report.layers),
            "critic_error": report.critic_error,
            "findings": [{**finding.to_dict(), "layer": finding.layer} for finding in report.findings],
            "elapsed_s": round_seconds(report.elapsed_s),
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _LOCK:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        return record

    def read(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The records, oldest first (the last ``limit`` when given); a torn line is skipped."""
        if not self.path.is_file():
            return []
        records = []
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict):
                    records.append(record)
        return records[-limit:] if limit else records


def round_seconds(seconds: float) -> float:
    return round(seconds, 4)
