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
    from localqwen.plugin_api.cancel import CancelToken

ProgressFn = Callable[[float, "float | None", str], None]  # (done bytes, total bytes, message)

HUBS = ("huggingface", "modelscope")


class DownloadError(RuntimeError):
    """A download failed; the message says why and what to do next."""


class NotCachedOfflineError(DownloadError):
    pass


class _ByteCounter:
    """Sums bytes across files (downloads run in parallel threads)."""

    def __init__(self, progress: ProgressFn | None, cancel: CancelToken | None, label: str) -> None:
        self.progress = progress
        self.cancel = cancel
        self.label = label
        self.done = 0.0
        self.total = 0.0
        self._lock = threading.Lock()

    def add_total(self, size: float) -> None:
        with self._lock:
            self.total += size or 0

    def add(self, size: float, name: str = "") -> None:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()  # interrupts the hub; the next run resumes
        with self._lock:
            self.done += size
            done, total = self.done, self.total
        if self.progress is not None:
            self.progress(done, total or None, f"{self.label} {name}".strip())


def _hf_tqdm(counter: _ByteCounter) -> type:
    from tqdm.auto import tqdm

    class ProgressTqdm(tqdm):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True  # we report progress ourselves
            super().__init__(*args, **kwargs)
            # Only byte bars count (huggingface_hub also opens a "Fetching N files" bar).
            self._bytes = kwargs.get("unit") == "B"
            if self._bytes:
                counter.add_total(kwargs.get("total") or 0)

        def update(self, n: float | None = 1) -> bool | None:
            if self._bytes and n:
                counter.add(n, str(self.desc or ""))
            return super().update(n)

    return ProgressTqdm


def _modelscope_callback(counter: _ByteCounter) -> type:
    from modelscope.hub import ProgressCallback

    class Callback(ProgressCallback):  # type: ignore[misc]
        def __init__(self, filename: str, file_size: int) -> None:
            super().__init__(filename, file_size)
            counter.add_total(file_size)

        def update(self, size: int) -> None:
            counter.add(size, self.filename)

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
