"""Files as MCP resources: what tool calls wrote, and the app's outputs folder.

A client may read a file only if a tool call on this server wrote or showed it (``FileWritten``,
``Image``) or if it lies inside the outputs folder; any other ``file://`` URI is refused, so an
MCP client cannot use the server to read the config, the database or the user's home. Paths are
resolved (symlinks followed) before the check.
"""

from __future__ import annotations

import base64
import mimetypes
import threading
from pathlib import Path
from typing import Any

MAX_RESOURCE_BYTES = 20 * 2**20
LISTED_OUTPUTS = 200  # the newest files of the outputs folder listed beside what tool calls wrote


class ResourceError(ValueError):
    """The URI names no file this server may hand out; the message says why."""


def file_uri(path: Path) -> str:
    return path.resolve().as_uri()


def path_of(uri: str) -> Path:
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise ResourceError(f"only file:// resources are served here, not {uri!r}")
    return Path(unquote(parts.path)).resolve()


def mime_type(path: Path) -> str:
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


class OutputFiles:
    """The files this server may hand out (thread-safe: tool calls run in worker threads)."""

    def __init__(self, outputs_dir: Path) -> None:
        self.outputs_dir = outputs_dir.resolve()
        self._written: dict[Path, str] = {}  # path -> description
        self._lock = threading.Lock()

    def add(self, path: str | Path, description: str = "") -> Path:
        resolved = Path(path).expanduser().resolve()
        with self._lock:
            self._written[resolved] = description or self._written.get(resolved, "")
        return resolved

    def readable(self, path: Path) -> bool:
        with self._lock:
            if path in self._written:
                return True
        return path.is_relative_to(self.outputs_dir)

    def listing(self) -> list[dict[str, Any]]:
        """``Resource`` fields for the written files, then the newest files of the outputs folder."""
        with self._lock:
            written = dict(self._written)
        found = [p for p in self.outputs_dir.rglob("*") if p.is_file()] if self.outputs_dir.is_dir() else []
        found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        entries = []
        for path in [*written, *(p.resolve() for p in found[:LISTED_OUTPUTS] if p.resolve() not in written)]:
            if path.is_file():
                entries.append({"uri": file_uri(path), "name": path.name, "mime_type": mime_type(path),
                                "size": path.stat().st_size,
                                "description": written.get(path) or f"in {path.parent}"})
        return entries

    def read(self, uri: str) -> dict[str, Any]:
        """``TextResourceContents`` or ``BlobResourceContents`` fields for ``uri``."""
        path = path_of(uri)
        if not self.readable(path):
            raise ResourceError(f"{path} was not written by a tool call on this server and is not in the "
                                f"outputs folder {self.outputs_dir}")
        if not path.is_file():
            raise ResourceError(f"{path} does not exist (any more)")
        size = path.stat().st_size
        if size > MAX_RESOURCE_BYTES:
            raise ResourceError(f"{path} is {size} bytes; resources are served up to {MAX_RESOURCE_BYTES}")
        data = path.read_bytes()
        kind = mime_type(path)
        if kind.startswith("text/") or kind in ("application/json", "application/jsonl", "application/x-ndjson") \
                or path.suffix in (".jsonl", ".md", ".toml", ".csv", ".tsv", ".log"):
            try:
                return {"uri": file_uri(path), "mime_type": kind, "text": data.decode("utf-8")}
            except UnicodeDecodeError:
                pass
        return {"uri": file_uri(path), "mime_type": kind, "blob": base64.b64encode(data).decode("ascii")}
