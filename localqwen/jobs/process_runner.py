"""Run a command that prints one JSON event per line on stdout, as an event stream.

This is how work runs in its own process (``localqwen train CONFIG --json``,
``localqwen run PLUGIN ACTION --json``): a crash there never takes the app down, and the
command's events reach the app's job exactly as the command wrote them. Cancelling sends SIGTERM
to the command's whole process group (so `accelerate launch` and its workers stop too), then
SIGKILL if it has not exited after a grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from localqwen.jobs.store import event_from_line
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import CancelToken
from localqwen.vocabulary.exit_codes import EXIT_CODES

TERMINATE_GRACE_S = 10.0
_STDERR_TAIL_LINES = 5


def command_events(argv: Sequence[str | Path], cancel: CancelToken, *, cwd: Path | None = None,
                   env: Mapping[str, str] | None = None, stderr_path: Path | None = None,
                   grace_s: float = TERMINATE_GRACE_S) -> Iterator[Any]:
    """Start ``argv`` and yield its events, ending with one ``Done``.

    - A stdout line that is a JSON event is yielded as that event; any other line becomes a ``Log``.
    - stderr joins stdout (as ``Log`` lines) unless ``stderr_path`` is given; then it goes to that
      file, and its last lines explain a failure.
    - The command's own ``Done`` is passed on last, once the process has exited. Without one the
      exit status decides (``vocabulary.exit_codes``): 0 ok, 130 or a cancel cancelled, anything else failed.
    - ``cancel`` sends SIGTERM to the process group and SIGKILL after ``grace_s``. The command's
      output is still read to its end (so it can finish shutting down, e.g. save a checkpoint),
      but only its ``Done`` is passed on: a consumer under ``finish_once(..., cancel)`` stops at
      the first event after a cancel.
    - If the consumer stops early (closes this generator), the command is stopped the same way
      and waited for.
    """
    command = [str(part) for part in argv]
    stderr_handle = stderr_path.open("w", encoding="utf-8") if stderr_path is not None else None
    try:
        process = subprocess.Popen(
            command, cwd=cwd, env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE, stderr=stderr_handle or subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, encoding="utf-8", errors="replace", bufsize=1,
            start_new_session=os.name == "posix",  # its own process group, so cancel reaches its children
        )
    except OSError as exc:
        if stderr_handle is not None:
            stderr_handle.close()
        raise RuntimeError(f"could not start {command[0]}: {exc.strerror or exc}") from None
    assert process.stdout is not None
    threading.Thread(target=_stop_on_cancel, args=(process, cancel, grace_s), name=f"cancel-{process.pid}",
                     daemon=True).start()
    done: ev.Done | None = None
    try:
        for line in process.stdout:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            event = event_from_line(line)
            if isinstance(event, ev.Done):
                done = event
            elif not cancel.cancelled:
                yield event
        code = process.wait()
    finally:
        if process.poll() is None:
            _stop_while_draining(process, grace_s)
        if stderr_handle is not None:
            stderr_handle.close()
    yield done if done is not None else _done_from_exit(code, cancel, stderr_path)


def stop_process_group(process: subprocess.Popen[Any], grace_s: float = TERMINATE_GRACE_S) -> None:
    """SIGTERM to the process and its group; SIGKILL if it is still running after ``grace_s``."""
    _signal_group(process, signal.SIGTERM)
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL if os.name == "posix" else signal.SIGTERM)
        process.wait()


def _stop_on_cancel(process: subprocess.Popen[Any], cancel: CancelToken, grace_s: float) -> None:
    while process.poll() is None:
        if cancel.wait(0.2):
            stop_process_group(process, grace_s)
            return


def _stop_while_draining(process: subprocess.Popen[Any], grace_s: float) -> None:
    # Keep reading its output while it shuts down: a command blocked on a full pipe never exits.
    drain = threading.Thread(target=_discard, args=(process.stdout,), daemon=True)
    drain.start()
    stop_process_group(process, grace_s)
    drain.join(timeout=1.0)  # a grandchild still holding the pipe must not hang the caller


def _discard(stream: IO[str] | None) -> None:
    if stream is None:
        return
    try:
        for _line in stream:
            pass
    except (OSError, ValueError):
        pass


def _signal_group(process: subprocess.Popen[Any], sig: int) -> None:
    try:
        if os.name == "posix":
            os.killpg(process.pid, sig)
        else:  # pragma: no cover - Windows has no process groups here
            process.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


def _done_from_exit(code: int, cancel: CancelToken, stderr_path: Path | None) -> ev.Done:
    if cancel.cancelled or code == EXIT_CODES["cancelled"]:
        return ev.Done(status="cancelled", summary=cancel.reason or f"exit code {code}")
    if code == 0:
        return ev.Done(status="ok")
    tail = _tail(stderr_path)
    return ev.Done(status="failed", summary=f"exit code {code}" + (": " + " | ".join(tail) if tail else ""))


def _tail(path: Path | None) -> list[str]:
    if path is None or not path.exists():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return [line.strip() for line in lines[-_STDERR_TAIL_LINES:] if line.strip()]
