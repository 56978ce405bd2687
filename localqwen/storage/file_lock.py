"""An exclusive lock held through a lock file, across processes and threads.

Used where two processes may write the same thing (one knowledge base, one captions folder): the
operating system releases the lock when its holder exits, even on ``kill -9``, so holding the lock
also proves the holder is alive. That is what lets recovery code tell a dead writer's leftovers
(safe to undo) from a live writer's work in progress (never to be touched).

    lock = FileLock(folder / "writer.lock")
    with lock:                 # waits for any other holder
        ...
    if lock.acquire(blocking=False):  # or only when free
        try: ...
        finally: lock.release()

Not re-entrant: a second ``acquire`` of a held lock waits, also in the same thread and process
(other threads wait like other processes do). It is not tied to a thread either, so a generator
that holds it may be resumed on another thread (as web servers do) and release it there.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.05


class FileLock:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._threads = threading.Lock()
        self._fd: int | None = None

    def acquire(self, blocking: bool = True, *, timeout: float | None = None,
                cancelled: Callable[[], bool] | None = None) -> bool:
        """Take the lock; False when ``blocking`` is off (or ``timeout`` passed, or ``cancelled()``
        turned true) while another holder has it."""
        started = time.monotonic()

        def give_up() -> bool:
            return (not blocking or (timeout is not None and time.monotonic() - started >= timeout)
                    or (cancelled is not None and cancelled()))

        # Another thread of this process holding it: wait in short steps, so timeout and cancel work.
        while not self._threads.acquire(blocking, POLL_S if blocking else -1):
            if give_up():
                return False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except BaseException:
            self._threads.release()
            raise
        while True:
            if _try_lock(fd):
                self._fd = fd
                _write_owner(fd)
                return True
            if give_up():
                os.close(fd)
                self._threads.release()
                return False
            time.sleep(POLL_S)

    def release(self) -> None:
        if self._fd is None:
            raise RuntimeError(f"{self.path}: released but not held")
        fd, self._fd = self._fd, None
        try:
            _unlock(fd)
        finally:
            os.close(fd)
            self._threads.release()

    def busy(self) -> bool:
        """Whether another holder has the lock now. Free, it is taken and dropped at once, so for that
        moment a non-blocking ``acquire`` elsewhere finds it busy."""
        if self.acquire(blocking=False):
            self.release()
            return False
        return True

    def holder(self) -> str:
        """Who holds the lock, as written by the holder ("pid 1234 on host"); "" when unknown."""
        try:
            return self.path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _write_owner(fd: int) -> None:
    """Record the holder for the messages of those waiting (best effort: the lock is what counts)."""
    import socket

    try:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
    except OSError:
        pass


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
