"""Fetch model repos from Hugging Face or ModelScope into each hub's own cache.

Both hubs resume interrupted downloads (partial ``.incomplete`` files are kept) and check
files against the hashes the hub publishes (LFS sha256 on Hugging Face, sha256 on ModelScope).
Offline mode passes ``local_files_only`` so the network is never touched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localqwen.vocabulary.cancel import CancelToken

ProgressFn = Callable[[float, "float | None", str], None]  # (done bytes, total bytes, message)

HUBS = ("huggingface", "modelscope")


class DownloadError(RuntimeError):
    """A download failed; the message says why and what to do next."""


class NotCachedOfflineError(DownloadError):
    pass


class _ByteCounter:
    """Sums bytes over progress sources (files or the hub's aggregate bar), thread-safe."""

    def __init__(self, progress: ProgressFn | None, cancel: CancelToken | None, label: str) -> None:
        self.progress = progress
        self.cancel = cancel
        self.label = label
        self._sources: dict[int, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def set(self, source: int, done: float, total: float | None, name: str = "") -> None:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()  # interrupts the hub; the next run resumes
        with self._lock:
            self._sources[source] = (done, total or 0.0)
            done_sum = sum(d for d, _ in self._sources.values())
            total_sum = sum(t for _, t in self._sources.values())
        if self.progress is not None:
            self.progress(done_sum, total_sum or None, f"{self.label} {name}".strip())


def _hf_tqdm(counter: _ByteCounter) -> type:
    from tqdm.auto import tqdm

    class ProgressTqdm(tqdm):  # type: ignore[misc]
        """Feeds huggingface_hub's byte bars into our progress callback (and shows nothing).

        The hub sets ``total`` after creating a bar, so it is read at every update. Its
        "Downloading bytes" bar counts compressed network bytes and is skipped; the bytes
        written to disk are the ones that add up to the files' sizes."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._name = str(kwargs.get("desc") or "")
            self._bytes = kwargs.get("unit") == "B" and not self._name.startswith("Downloading bytes")
            self._done = float(kwargs.get("initial") or 0)
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

        def update(self, n: float | None = 1) -> bool | None:
            if self._bytes and n:
                self._done += n
                counter.set(id(self), self._done, self.total, self._name)
            return super().update(n)

    return ProgressTqdm


def _modelscope_callback(counter: _ByteCounter) -> type:
    from modelscope.hub import ProgressCallback

    class Callback(ProgressCallback):  # type: ignore[misc]
        def __init__(self, filename: str, file_size: int) -> None:
            super().__init__(filename, file_size)
            self._done = 0.0
            counter.set(id(self), 0.0, file_size, filename)

        def update(self, size: int) -> None:
            self._done += size
            counter.set(id(self), self._done, self.file_size, self.filename)

    return Callback


def download_repo(repo: str, *, hub: str = "huggingface", allow_patterns: list[str] | None = None,
                  offline: bool = False, progress: ProgressFn | None = None,
                  cancel: CancelToken | None = None, revision: str | None = None) -> Path:
    """Download (or, offline, find in the cache) ``repo`` and return its local folder."""
    if hub not in HUBS:
        raise DownloadError(f"unknown hub {hub!r}; choose one of {', '.join(HUBS)}")
    counter = _ByteCounter(progress, cancel, repo)
    try:
        if hub == "huggingface":
            return _from_huggingface(repo, allow_patterns, offline, counter, revision)
        return _from_modelscope(repo, allow_patterns, offline, counter, revision)
    except DownloadError:
        raise
    except Exception as exc:
        if type(exc).__name__ == "Cancelled":
            raise
        raise _explain(exc, repo, hub, offline) from exc


def _from_huggingface(repo: str, patterns: list[str] | None, offline: bool, counter: _ByteCounter,
                      revision: str | None) -> Path:
    from huggingface_hub import snapshot_download

    folder = snapshot_download(
        repo, revision=revision, allow_patterns=patterns, local_files_only=offline,
        tqdm_class=_hf_tqdm(counter),
    )
    return Path(folder)


def _from_modelscope(repo: str, patterns: list[str] | None, offline: bool, counter: _ByteCounter,
                     revision: str | None) -> Path:
    try:
        from modelscope.hub.snapshot_download import snapshot_download
    except ImportError as exc:
        raise DownloadError("ModelScope downloads need `pip install 'localqwen[modelscope]'`") from exc
    kwargs: dict[str, Any] = {"allow_patterns": patterns, "local_files_only": offline,
                              "progress_callbacks": [_modelscope_callback(counter)]}
    if revision:
        kwargs["revision"] = revision
    return Path(snapshot_download(repo, **kwargs))


def _explain(exc: Exception, repo: str, hub: str, offline: bool) -> DownloadError:
    name = type(exc).__name__
    text = str(exc)
    if offline or name in ("LocalEntryNotFoundError", "OfflineModeIsEnabled") or "offline" in text.lower():
        return NotCachedOfflineError(
            f"{repo} is not in the {hub} cache and offline mode is on; connect and run "
            f"`localqwen models download {repo}`, or set runtime.offline = false"
        )
    if name in ("RepositoryNotFoundError", "GatedRepoError"):
        return DownloadError(f"{hub} has no accessible repo {repo!r} ({name}); check the id or log in")
    if "No space left" in text:
        return DownloadError(f"the disk is full while downloading {repo}; free space and run again (it resumes)")
    return DownloadError(f"downloading {repo} from {hub} failed: {name}: {text[:300]} "
                         "(run again to resume)")
