"""Atomic file writes: a crash mid-write leaves the previous good file, never half of a new one.

The written file gets the permissions a plain ``open(path, "w")`` would give it (0666 less the
umask, so usually 0644), or keeps those of the file it replaces: the temp file's private 0600
must not leak into outputs that others (a web server, a shared folder, Ollama) have to read.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

_UMASK_LOCK = threading.Lock()


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8", *,
                permissions: int | None = None) -> Iterator[IO]:
    """Open a temp file beside ``path``; on success fsync and rename it over ``path``.

    ``permissions`` (e.g. 0o600 for a secret) overrides the usual mode (see the module docstring)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    binary = "b" in mode
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        _set_mode(fd, tmp_name, permissions if permissions is not None else _normal_mode(target))
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def _normal_mode(target: Path) -> int:
    """The replaced file's permission bits, or what a new file gets under the current umask."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere the only way to read it is to set it (briefly) and put it back
        old = os.umask(0o022)
        os.umask(old)
    return old


def _set_mode(fd: int, name: str, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # pragma: no cover - Windows: only the read-only bit exists
        os.chmod(name, mode)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_open(path, "w") as handle:
        handle.write(text)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_open(path, "wb", encoding=None) as handle:
        handle.write(data)
