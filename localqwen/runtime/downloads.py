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
    """Not in the cache, and downloading is switched off (LocalQwen's offline mode or the hub's own)."""


class NetworkError(DownloadError):
    """The hub could not be reached and the files are not cached."""


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
                  cancel: CancelToken | None = None, revision: str | None = None, model_id: str = "") -> Path:
    """Download (or, offline, find in the cache) ``repo`` and return its local folder.

    ``model_id`` is the name the user knows it by (a catalog id), used in the advice of errors."""
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
        raise _explain(exc, repo, hub, offline, model_id) from exc


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


def _explain(exc: Exception, repo: str, hub: str, offline: bool, model_id: str = "") -> DownloadError:
    """Turn a hub library's exception into what actually failed and what to do about it.

    Three different causes look alike in the hub libraries (all "not found in the local cache"):
    our own offline mode, the hub's offline switch in the environment, and a network that does
    not answer; each gets its own message."""
    name = type(exc).__name__
    text = str(exc)
    command = f"`localqwen models download {model_id or repo}`"
    if offline:
        return NotCachedOfflineError(
            f"{repo} is not in the {hub} cache and LocalQwen's offline mode is on (runtime.offline = true); "
            f"set runtime.offline = false and run {command}, or use a model that is on disk"
        )
    env_switch = _hub_offline_env(hub)
    if env_switch and (name in ("LocalEntryNotFoundError", "OfflineModeIsEnabled") or "offline" in text.lower()
                       or "outgoing traffic has been disabled" in text):
        return NotCachedOfflineError(
            f"{repo} is not in the {hub} cache and the environment variable {env_switch} stops all "
            f"downloads (runtime.offline is false); unset it and run {command}, or use a model that is on disk"
        )
    network = _network_failure(exc)
    if network:
        return NetworkError(
            f"could not reach {hub} at {_endpoint(hub)} ({network}) and {repo} is not in its cache; check "
            f"the network (or proxy), then run {command} again (it resumes); runtime.hub = "
            f"\"{'huggingface' if hub == 'modelscope' else 'modelscope'}\" tries the other hub"
        )
    if name in ("RepositoryNotFoundError", "GatedRepoError"):
        return DownloadError(f"{hub} has no accessible repo {repo!r} ({name}); check the id or log in")
    if "No space left" in text:
        return DownloadError(f"the disk is full while downloading {repo}; free space and run again (it resumes)")
    return DownloadError(f"downloading {repo} from {hub} failed: {name}: {text[:300]} "
                         "(run again to resume)")


def _hub_offline_env(hub: str) -> str:
    """The environment variable (as ``NAME=value``) that puts the hub library itself offline, if set."""
    import os

    names = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if hub == "huggingface" else ("MODELSCOPE_OFFLINE",)
    for variable in names:
        value = os.environ.get(variable, "").strip().lower()
        if value in ("1", "true", "yes", "on"):
            return f"{variable}={os.environ[variable]}"
    return ""


# Words in exception class names and messages that mean "the network did not answer".
_NETWORK_NAMES = ("ConnectError", "ConnectionError", "ConnectTimeout", "Timeout", "ProxyError", "NewConnectionError",
                  "MaxRetryError", "NameResolutionError", "gaierror")
_NETWORK_TEXT = ("connection refused", "name or service not known", "temporary failure in name resolution",
                 "network is unreachable", "timed out", "no route to host", "failed to establish a new connection",
                 "nodename nor servname")


def _network_failure(exc: BaseException) -> str:
    """A short reason when ``exc`` (or anything it was raised from) is a network failure, else ""."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = type(current).__name__
        message = str(current)
        lowered = message.lower()
        hit = next((word for word in _NETWORK_TEXT if word in lowered), "")
        if hit or any(word in kind for word in _NETWORK_NAMES):
            return f"{kind}: {hit}" if hit else kind
        current = current.__cause__ or current.__context__
    return ""


def _endpoint(hub: str) -> str:
    import os

    if hub == "huggingface":
        return os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return os.environ.get("MODELSCOPE_DOMAIN") or "https://www.modelscope.cn"
