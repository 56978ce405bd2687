"""Read documents in a separate, limited process, so that one hostile file costs one error line.

A compression-bomb PDF, a PDF with 200,000 page references or a zip-bomb ``.docx`` can make a
parser take minutes, gigabytes or a crash. :class:`IsolatedReader` hands each file to one
long-lived worker process (:mod:`localqwen.retrieval.reader_worker`: started once per batch, so
the normal case costs one process start, not one per file) whose address space is capped
(``RLIMIT_AS``), waits at most a time limit per file, and turns a timeout, a memory blow-up or a
crash into :class:`DocumentError` for that file; the next file gets a fresh worker. Parser log
output is capped per file, and the worker's own stderr is kept only as a short tail for the error
message.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from localqwen.retrieval.loaders import DEFAULT_MAX_EXPANDED_BYTES, Block, Document, DocumentError

_STDERR_TAIL_BYTES = 2000
_START_TIMEOUT_S = 60.0  # a fresh worker imports its parsers (seconds on a busy machine)


@dataclass(frozen=True)
class ParseLimits:
    """What reading one document may cost."""

    timeout_s: float = 30.0  # per file, plus ``timeout_s_per_mb`` for each MB of the file
    timeout_s_per_mb: float = 10.0
    max_timeout_s: float = 600.0
    memory_mb: int = 2048  # the worker's whole address space (0 = no cap)
    max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES  # what a .docx may unpack to
    max_log_lines: int = 5  # parser messages kept per file

    def timeout_for(self, size_bytes: int) -> float:
        return min(self.max_timeout_s, self.timeout_s + self.timeout_s_per_mb * size_bytes / 2**20)


class IsolatedReader:
    """``reader.load(path, max_bytes=...)`` like :func:`~localqwen.retrieval.loaders.load_document`,
    in the worker process. Call :meth:`close` when done (a forgotten reader's worker is killed when
    the reader is garbage collected, and exits by itself when this process goes)."""

    def __init__(self, limits: ParseLimits | None = None) -> None:
        self.limits = limits or ParseLimits()
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr_tail: deque[bytes] = deque()
        self._answers: queue.Queue[bytes | None] = queue.Queue()
        self._finalizer: weakref.finalize | None = None
        self._ready = False

    def start(self) -> None:
        """Start the worker now without waiting for it (it imports its parsers while the caller
        does something else, e.g. loads the embedder); :meth:`load` starts one anyway."""
        if self._process is None or self._process.poll() is not None:
            self._spawn()

    def load(self, path: Path, *, max_bytes: int) -> Document:
        path = Path(path)
        process = self._ensure_worker(path)
        request = {"path": str(path), "max_bytes": max_bytes, "max_expanded_bytes": self.limits.max_expanded_bytes,
                   "max_log_lines": self.limits.max_log_lines}
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        timeout = self.limits.timeout_for(size)
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
        except BrokenPipeError:
            raise DocumentError(f"{path.name}: {self._crash_reason()}") from None
        line = self._read_line(timeout)
        if line is None:
            if process.poll() is None:
                self._kill()
                raise DocumentError(f"{path.name}: reading it took longer than {timeout:.0f} s, so it was stopped "
                                    "(a file built to hang the parser?)")
            raise DocumentError(f"{path.name}: {self._crash_reason()}")
        reply = json.loads(line)
        if reply.get("exit"):
            self._kill()
        if not reply["ok"]:
            raise DocumentError(reply["error"])
        blocks = [Block(text, page=page, headings=tuple(headings)) for text, page, headings in reply["blocks"]]
        return Document(path, blocks, reply["encoding"], list(reply["warnings"]))

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if self._finalizer is not None:
            self._finalizer.detach()
        assert process.stdin is not None
        try:
            process.stdin.close()  # the worker exits at end of input
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            _kill_process(process)

    def __enter__(self) -> IsolatedReader:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # ------------------------------------------------------------ the worker process
    def _ensure_worker(self, path: Path) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._spawn()
        process = self._process
        assert process is not None
        if not self._ready:
            if self._read_line(_START_TIMEOUT_S) is None:
                if process.poll() is None:
                    self._kill()
                    raise DocumentError(f"{path.name}: the document reader process did not start within "
                                        f"{_START_TIMEOUT_S:.0f} s")
                raise DocumentError(f"{path.name}: {self._crash_reason()}")
            self._ready = True
        return process

    def _spawn(self) -> None:
        self._process = None
        self._ready = False
        self._answers = queue.Queue()  # a new queue: a killed worker's reader thread may still post to the old one
        self._stderr_tail.clear()
        # Our own package must be importable from the child even when run from a source checkout.
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), package_root) if p)
        process = subprocess.Popen(
            [sys.executable, "-m", "localqwen.retrieval.reader_worker", str(self.limits.memory_mb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            start_new_session=os.name == "posix",  # Ctrl-C in a terminal reaches the app, which stops it
        )
        assert process.stderr is not None and process.stdout is not None
        threading.Thread(target=_keep_tail, args=(process.stderr, self._stderr_tail), daemon=True,
                         name=f"reader-stderr-{process.pid}").start()
        # A thread per pipe (not select()) so the per-file time limit works on every platform.
        threading.Thread(target=_pass_lines, args=(process.stdout, self._answers), daemon=True,
                         name=f"reader-answers-{process.pid}").start()
        self._finalizer = weakref.finalize(self, _kill_process, process)
        self._process = process

    def _read_line(self, timeout: float) -> bytes | None:
        """The worker's next answer, or None when it died or did not answer in time."""
        try:
            return self._answers.get(timeout=timeout)  # None: the worker closed its output (it died)
        except queue.Empty:
            return None

    def _crash_reason(self) -> str:
        process, self._process = self._process, None
        code = None
        if process is not None:
            try:
                code = process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill_process(process)
                code = process.returncode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            what = f"the reader process was killed ({name})"
        else:
            what = f"the reader process stopped (exit status {code})"
        tail = b"".join(self._stderr_tail).decode("utf-8", "replace").strip().splitlines()[-3:]
        detail = f": {' | '.join(tail)}" if tail else ""
        return f"could not be read; {what} while parsing it{detail}"

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if self._finalizer is not None:
                self._finalizer.detach()
            _kill_process(process)


def _kill_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    if process.stdin is not None:  # stdout and stderr are closed by the threads that drain them
        with contextlib.suppress(OSError):
            process.stdin.close()


def _pass_lines(stream: IO[bytes], answers: queue.Queue[bytes | None]) -> None:
    for line in stream:
        answers.put(line.rstrip(b"\n"))
    answers.put(None)
    stream.close()


def _keep_tail(stream: IO[bytes], tail: deque[bytes]) -> None:
    """Drain the worker's stderr (so it never blocks on a full pipe), keeping only its last bytes."""
    size = 0
    for chunk in iter(lambda: stream.read1(4096), b""):  # type: ignore[attr-defined]
        tail.append(chunk)
        size += len(chunk)
        while size > _STDERR_TAIL_BYTES and len(tail) > 1:
            size -= len(tail.popleft())
    stream.close()


__all__ = ["IsolatedReader", "ParseLimits"]
