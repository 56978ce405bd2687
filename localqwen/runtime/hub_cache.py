"""Models already downloaded into the Hugging Face or ModelScope caches, by anything.

A user who ran ``huggingface-cli download`` or another tool has models on disk that LocalQwen's
own download registry does not know about. This module finds them by walking the caches (no hub
library is imported, no network is touched), so model pickers can offer them next to the catalog.

Where the caches are follows each hub's own rules:
Hugging Face ``HF_HUB_CACHE`` > ``HUGGINGFACE_HUB_CACHE`` > ``HF_HOME``/hub >
``XDG_CACHE_HOME``/huggingface/hub > ``~/.cache/huggingface/hub``; ModelScope ``MODELSCOPE_CACHE``
> ``~/.cache/modelscope/hub`` (also ``~/.cache/modelscope``, where newer ModelScope versions write).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

HUB_NAMES = ("huggingface", "modelscope")

# Architectures that generate text; embedders and rerankers in the same cache are left out of
# chat model pickers (kind "other").
_GENERATIVE_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration")
# How deep a ModelScope cache is walked looking for model folders (its layouts vary by version:
# models/owner/name, models/owner--name/snapshots/rev, owner/name).
_MODELSCOPE_DEPTH = 5


@dataclass(frozen=True)
class CachedModel:
    """One usable model found in a hub cache."""

    hub: str  # huggingface | modelscope
    repo: str  # owner/name as the hub spells it
    path: Path  # a transformers model folder, or a .gguf file
    format: str  # transformers | gguf
    kind: str  # text | vision | other (embedders, rerankers, anything that does not generate)
    size_bytes: int

    @property
    def label(self) -> str:
        """What a picker shows: repo, format and size, e.g. ``Qwen/Qwen3-0.6B · 1.5 GB (huggingface)``."""
        name = self.repo if self.format == "transformers" else f"{self.repo} · {self.path.name}"
        return f"{name} · {self.size_bytes / 1e9:.1f} GB ({self.hub})"

    @property
    def generative(self) -> bool:
        return self.kind in ("text", "vision")


def huggingface_cache_dir() -> Path:
    """The Hugging Face hub cache folder, by the same environment rules huggingface_hub uses."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(os.path.expandvars(explicit)).expanduser()
    home = os.environ.get("HF_HOME")
    if home:
        return Path(os.path.expandvars(home)).expanduser() / "hub"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "huggingface" / "hub"


def modelscope_cache_dirs() -> list[Path]:
    """The ModelScope cache folders to look in (``MODELSCOPE_CACHE`` alone when it is set)."""
    explicit = os.environ.get("MODELSCOPE_CACHE")
    if explicit:
        return [Path(explicit).expanduser()]
    base = Path.home() / ".cache" / "modelscope"
    return [base / "hub", base]


def cached_models(*, hubs: tuple[str, ...] = HUB_NAMES, generative_only: bool = False) -> list[CachedModel]:
    """Every complete model in the given hubs' caches, sorted by hub then repo.

    Incomplete downloads (a broken blob link, no weights, a ``.incomplete`` file still there)
    are skipped: a picker must not offer a model that cannot load."""
    unknown = [hub for hub in hubs if hub not in HUB_NAMES]
    if unknown:
        raise ValueError(f"unknown hub {unknown[0]!r}; choose from {', '.join(HUB_NAMES)}")
    found: list[CachedModel] = []
    if "huggingface" in hubs:
        found += _huggingface_models(huggingface_cache_dir())
    if "modelscope" in hubs:
        seen: set[Path] = set()
        for root in modelscope_cache_dirs():
            for model in _modelscope_models(root):
                if model.path.resolve() not in seen:
                    seen.add(model.path.resolve())
                    found.append(model)
    if generative_only:
        found = [model for model in found if model.generative]
    return sorted(found, key=lambda model: (model.hub, model.repo.lower(), model.path.name))


def _huggingface_models(cache: Path) -> list[CachedModel]:
    """``models--owner--name/snapshots/<revision>/``: the revision ``refs/main`` points at, else the newest."""
    if not cache.is_dir():
        return []
    found: list[CachedModel] = []
    for repo_dir in sorted(cache.glob("models--*")):
        parts = repo_dir.name.split("--")[1:]
        if len(parts) < 2:
            continue
        snapshot = _current_snapshot(repo_dir)
        if snapshot is None:
            continue
        if any((repo_dir / "blobs").glob("*.incomplete")) and not _has_weights(snapshot):
            continue  # a download still in progress (or interrupted) that has nothing usable yet
        found += _models_in_folder(snapshot, hub="huggingface", repo="/".join(parts))
    return found


def _current_snapshot(repo_dir: Path) -> Path | None:
    snapshots = repo_dir / "snapshots"
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        candidate = snapshots / ref.read_text(encoding="utf-8").strip()
        if candidate.is_dir():
            return candidate
    if not snapshots.is_dir():
        return None
    folders = [folder for folder in snapshots.iterdir() if folder.is_dir()]
    return max(folders, key=lambda folder: folder.stat().st_mtime) if folders else None


def _modelscope_models(root: Path) -> list[CachedModel]:
    """Walk a ModelScope cache a few levels deep for folders that hold a model."""
    if not root.is_dir():
        return []
    found: list[CachedModel] = []
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if folder.name.startswith(".") or folder.name in ("datasets", "._____temp", "blobs"):
            continue
        if _has_weights(folder):
            repo = _modelscope_repo(folder.relative_to(root))
            if repo:
                found += _models_in_folder(folder, hub="modelscope", repo=repo)
            continue
        if depth < _MODELSCOPE_DEPTH:
            try:
                children = [child for child in folder.iterdir() if child.is_dir()]
            except OSError:
                continue
            stack += [(child, depth + 1) for child in children]
    return found


def _modelscope_repo(relative: Path) -> str:
    """owner/name from a folder's place in the cache; ModelScope writes dots in names as ``___``."""
    parts = [part for part in relative.parts if part not in ("hub", "models")]
    if "snapshots" in parts:  # owner--name/snapshots/<revision>
        parts = parts[:parts.index("snapshots")]
        if len(parts) == 1 and "--" in parts[0]:
            parts = parts[0].split("--", 1)
    if len(parts) != 2:
        return ""
    return "/".join(part.replace("___", ".") for part in parts)


def _has_weights(folder: Path) -> bool:
    return any(_intact(file) for pattern in ("*.safetensors", "*.gguf") for file in folder.glob(pattern))


def _intact(file: Path) -> bool:
    """A file (or a cache symlink whose blob is present) with some content."""
    try:
        return file.is_file() and file.stat().st_size > 0
    except OSError:
        return False


def _models_in_folder(folder: Path, *, hub: str, repo: str) -> list[CachedModel]:
    """A transformers model (config.json + safetensors) and/or each GGUF file in ``folder``."""
    found: list[CachedModel] = []
    weights = sorted(folder.glob("*.safetensors"))
    config = folder / "config.json"
    if weights and all(_intact(weight) for weight in weights) and _intact(config):
        kind = _kind_from_config(config)
        size = sum(weight.stat().st_size for weight in weights)
        found.append(CachedModel(hub, repo, folder, "transformers", kind, size))
    ggufs = sorted(folder.rglob("*.gguf"))
    has_projector = any(gguf.name.lower().startswith("mmproj") for gguf in ggufs)
    for gguf in ggufs:
        if gguf.name.lower().startswith("mmproj") or not _intact(gguf) or not _gguf_magic(gguf):
            continue
        kind = "vision" if has_projector else "text"
        found.append(CachedModel(hub, repo, gguf, "gguf", kind, gguf.stat().st_size))
    return found


def _kind_from_config(config: Path) -> str:
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "other"
    architectures = data.get("architectures") or []
    if not any(str(name).endswith(_GENERATIVE_SUFFIXES) for name in architectures):
        return "other"
    return "vision" if "vision_config" in data else "text"


def _gguf_magic(file: Path) -> bool:
    try:
        with file.open("rb") as handle:
            return handle.read(4) == b"GGUF"
    except OSError:
        return False
