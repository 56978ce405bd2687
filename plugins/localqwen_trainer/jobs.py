"""Start `localqwen train CONFIG` as a subprocess and follow its progress.jsonl.

The job runs in its own process (a crash there never takes the UI down); its events are re-yielded
here, with a live loss chart (PNG) every few seconds. Cancelling sends SIGTERM, so the job saves a
checkpoint and ends with a "cancelled" Done that this follower passes on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localqwen.plugin_api import events as ev
from localqwen.vocabulary.cancel import CancelToken

CHART_EVERY_S = 5.0


def follow_job(config_path: Path, output_dir: Path, cancel: CancelToken, *, resume: bool = False,
               poll_s: float = 0.3) -> Iterator[Any]:
    from localqwen.training.launch import job_command
    from localqwen.training.runner import write_loss_chart

    log_path = output_dir / "progress.jsonl"
    output_dir.mkdir(parents=True, exist_ok=True)
    offset = log_path.stat().st_size if (resume and log_path.exists()) else 0
    if not resume and log_path.exists():
        log_path.unlink()
    stderr = (output_dir / "job_stderr.log").open("w", encoding="utf-8")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(job_command(config_path, resume=resume), stdout=subprocess.DEVNULL, stderr=stderr, env=env)
    yield ev.Log(message=f"job started (pid {process.pid}); log: {log_path}")
    losses: list[tuple[int, float]] = []
    last_chart = time.monotonic()
    done: ev.Done | None = None
    buffer = ""
    signalled = False
    try:
        while True:
            if cancel.cancelled and not signalled and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                signalled = True
                yield ev.Log(message="stopping: the job saves a checkpoint first")
            if log_path.exists():
                with log_path.open(encoding="utf-8") as handle:
                    handle.seek(offset)
                    chunk = handle.read()
                    offset = handle.tell()
                buffer += chunk
                *lines, buffer = buffer.split("\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = ev.event_from_json(line)
                    if isinstance(event, ev.Done):
                        done = event
                        continue
                    if isinstance(event, ev.Metric) and "loss" in event.values:
                        losses.append((event.step, event.values["loss"]))
                    yield event
            if losses and time.monotonic() - last_chart > CHART_EVERY_S:
                chart = write_loss_chart(losses, output_dir / "loss_live.png")
                last_chart = time.monotonic()
                if chart:
                    yield ev.Image(path=str(chart), caption=f"loss at step {losses[-1][0]}")
            if process.poll() is not None and (done is not None or not log_path.exists() or not chunk_pending(log_path, offset)):
                break
            time.sleep(poll_s)
    finally:
        if process.poll() is None:  # the follower itself was closed: stop the job cleanly
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
        stderr.close()
    if done is None:
        tail = (output_dir / "job_stderr.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        done = ev.Done(status="failed", summary=f"the job exited with code {process.returncode}: " + " | ".join(tail))
    if losses:
        chart = write_loss_chart(losses, output_dir / "loss_live.png")
        if chart:
            yield ev.Image(path=str(chart), caption="training loss")
    yield done


def chunk_pending(path: Path, offset: int) -> bool:
    return path.stat().st_size > offset
