"""Model files, the catalog and the model manager.

The hub is the one boundary faked here (no network on this machine): ``snapshot_download`` is
replaced by a function that writes a repo snapshot the way huggingface_hub lays out its cache
and reports byte progress through the ``tqdm_class`` it is given. Offline mode uses the real
huggingface_hub.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from localqwen.config import Config, RuntimeSection
from localqwen.paths import app_paths
from localqwen.runtime import catalog
from localqwen.runtime.downloads import NotCachedOfflineError
from localqwen.runtime.model_files import (
    MissingConfigError,
    ModelFileError,
    PickleCheckpointError,
    TruncatedFileError,
    check_gguf,
    check_model_folder,
)
from localqwen.runtime.model_manager import ModelManager, NotDownloadedError
from localqwen.vocabulary.cancel import Cancelled, CancelToken


def manager(**runtime) -> ModelManager:
    return ModelManager(app_paths(), Config(runtime=RuntimeSection(**runtime)))


class FakeHub:
    """Stands in for huggingface_hub.snapshot_download: copies prepared repos into a cache."""

    def __init__(self, cache: Path, repos: dict[str, Path]) -> None:
        self.cache = cache
        self.repos = repos
        self.calls: list[dict] = []

    def __call__(self, repo_id, *, allow_patterns=None, local_files_only=False, tqdm_class=None, **kwargs):
        import fnmatch

        self.calls.append({"repo": repo_id, "patterns": allow_patterns, "offline": local_files_only})
        snapshot = self.cache / ("models--" + repo_id.replace("/", "--")) / "snapshots" / "abc123"
        snapshot.mkdir(parents=True, exist_ok=True)
        # Like huggingface_hub 2.x: a network-bytes bar and a written-bytes bar whose totals
        # grow as files are discovered (set as attributes after creation).
        transfer = tqdm_class(total=0, unit="B", desc="Downloading bytes")
        written = tqdm_class(total=0, unit="B", desc="Reconstructing (incomplete total...)")
        files = [f for f in sorted(self.repos[repo_id].iterdir())
                 if not allow_patterns or any(fnmatch.fnmatch(f.name, p) for p in allow_patterns)]
        for file in files:
            written.total += file.stat().st_size
            transfer.total += file.stat().st_size // 2
        for file in files:
            shutil.copy(file, snapshot / file.name)
            transfer.update(file.stat().st_size // 2)
            written.update(file.stat().st_size)
        return str(snapshot)


def test_local_folder_and_gguf_are_accepted(tiny_qwen3_vl_path, gemma_gguf_path):
    models = manager()
    folder = models.resolve(str(tiny_qwen3_vl_path))
    assert folder.format == "transformers" and folder.vision and folder.path == tiny_qwen3_vl_path.resolve()
    gguf = models.resolve(str(gemma_gguf_path))
    assert gguf.format == "gguf" and gguf.mmproj is None and not gguf.info.transformers
    assert 0.2 < gguf.info.params_b < 0.6


def test_a_missing_path_is_not_taken_for_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    models = manager()
    for typed in ("runs/safari/final", "models/Qwen3-VL-2B-Instruct", "runs\\final"):
        with pytest.raises(ModelFileError, match="model folder not found"):
            models.resolve(typed)
    (tmp_path / "Qwen").mkdir()  # a folder named like the owner does not hide a catalog model's hub id
    with pytest.raises(NotDownloadedError):
        models.resolve("Qwen/Qwen3-0.6B", download=False)


def test_specific_errors_for_bad_model_files(tmp_path, tiny_qwen3_path, gemma_gguf_path):
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    shutil.copy(tiny_qwen3_path / "config.json", pickled)
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04 pickle")
    with pytest.raises(PickleCheckpointError, match="safetensors only"):
        check_model_folder(pickled)

    no_config = tmp_path / "no_config"
    no_config.mkdir()
    shutil.copy(tiny_qwen3_path / "model.safetensors", no_config)
    with pytest.raises(MissingConfigError, match="no config.json"):
        check_model_folder(no_config)

    truncated = tmp_path / "truncated"
    shutil.copytree(tiny_qwen3_path, truncated)
    data = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(TruncatedFileError, match="truncated"):
        check_model_folder(truncated)
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    with pytest.raises(TruncatedFileError):
        TransformersEngine(truncated)

    cut_gguf = tmp_path / "cut.gguf"
    with gemma_gguf_path.open("rb") as source:
        cut_gguf.write_bytes(source.read(20_000_000))
    with pytest.raises(TruncatedFileError, match="truncated"):
        check_gguf(cut_gguf)
    header_only = tmp_path / "header.gguf"
    with gemma_gguf_path.open("rb") as source:
        header_only.write_bytes(source.read(3000))
    with pytest.raises(TruncatedFileError):
        check_gguf(header_only)
    check_gguf(gemma_gguf_path)  # the intact file passes
    # A file that passed is remembered, but one changed afterwards (cut short in place) is checked again.
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(gemma_gguf_path, copy)
    check_gguf(copy)
    with copy.open("r+b") as handle:
        handle.truncate(20_000_000)
    with pytest.raises(TruncatedFileError, match="truncated"):
        check_gguf(copy)


def test_download_records_lists_resolves_and_removes(monkeypatch, tmp_path, tiny_qwen3_path):
    import huggingface_hub

    hub = FakeHub(tmp_path / "hf_cache", {"Qwen/Qwen3-0.6B": tiny_qwen3_path})
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub)
    models = manager()
    progress: list[tuple[float, float | None]] = []
    resolved = models.download("qwen3-0.6b", progress=lambda done, total, msg: progress.append((done, total)))
    assert resolved.format == "transformers" and (resolved.path / "model.safetensors").exists()
    assert progress and progress[-1][0] == progress[-1][1] > 0
    assert "*.safetensors" in hub.calls[0]["patterns"] and "*.bin" not in hub.calls[0]["patterns"]
    assert models.path("qwen3-0.6b") == resolved.path
    assert models.resolve("Qwen/Qwen3-0.6B").path == resolved.path  # hub id resolves to the same entry
    row = next(r for r in models.list_models() if r["id"] == "qwen3-0.6b")
    assert row["status"] == "downloaded"
    removed = models.remove("qwen3-0.6b")
    assert removed and not removed[0].exists() and removed[0].name == "models--Qwen--Qwen3-0.6B"
    assert models.path("qwen3-0.6b") is None
    with pytest.raises(NotDownloadedError, match="models download"):
        models.resolve("qwen3-0.6b", download=False)


def test_gguf_download_picks_the_quant_and_the_vision_projector(monkeypatch, tmp_path, gemma_gguf_path):
    import huggingface_hub

    repo = tmp_path / "repo"
    repo.mkdir()
    # A GGUF repo layout: several quants plus projectors (real GGUF bytes, renamed).
    for name in ("Qwen3VL-2B-Instruct-Q4_K_M.gguf", "Qwen3VL-2B-Instruct-Q8_0.gguf", "mmproj-Qwen3VL-2B-Instruct-F16.gguf"):
        (repo / name).symlink_to(gemma_gguf_path)
    hub = FakeHub(tmp_path / "hf_cache", {"Qwen/Qwen3-VL-2B-Instruct-GGUF": repo})
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub)
    resolved = manager().download("qwen3-vl-2b-instruct", format="gguf")
    assert resolved.path.name == "Qwen3VL-2B-Instruct-Q4_K_M.gguf"
    assert resolved.mmproj is not None and resolved.mmproj.name.startswith("mmproj")
    assert sorted(p.name for p in resolved.path.parent.iterdir()) == [
        "Qwen3VL-2B-Instruct-Q4_K_M.gguf", "mmproj-Qwen3VL-2B-Instruct-F16.gguf"]


def test_a_second_download_of_the_same_model_is_refused_while_the_first_runs(monkeypatch, tmp_path, tiny_qwen3_path):
    """Two clicks on Download (or the web view and `localqwen models download`): the second is refused
    at once, naming the holder, instead of a job that fetches nothing new; another model is not held up."""
    import threading

    import huggingface_hub

    from localqwen.runtime.model_manager import DownloadBusy

    hub = FakeHub(tmp_path / "hf_cache", {"Qwen/Qwen3-0.6B": tiny_qwen3_path, "Qwen/Qwen3-1.7B": tiny_qwen3_path})
    started, finish = threading.Event(), threading.Event()

    def slow_hub(repo_id, **kwargs):
        if repo_id == "Qwen/Qwen3-0.6B":
            started.set()
            assert finish.wait(30)
        return hub(repo_id, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", slow_hub)
    results = []
    first = threading.Thread(target=lambda: results.append(manager().download("qwen3-0.6b")))
    first.start()
    try:
        assert started.wait(30)
        with pytest.raises(DownloadBusy, match=r"qwen3-0.6b is already downloading \(pid \d+ on "):
            manager().download("Qwen/Qwen3-0.6B")  # its hub id names the same download
        assert manager().download("qwen3-1.7b").format == "transformers"
    finally:
        finish.set()
        first.join(30)
    assert results and results[0].path.exists()
    assert manager().download("qwen3-0.6b").path == results[0].path  # the slot is free again
    assert [call["repo"] for call in hub.calls].count("Qwen/Qwen3-0.6B") == 2


def test_cancelling_a_download_stops_it(monkeypatch, tmp_path, tiny_qwen3_path):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", FakeHub(tmp_path / "c", {"Qwen/Qwen3-4B": tiny_qwen3_path}))
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        manager().download("qwen3-4b", cancel=cancel)


def test_offline_and_not_cached_is_a_clear_error(monkeypatch, tmp_path):
    # Real huggingface_hub, empty cache, offline: it must not touch the network and must explain.
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    with pytest.raises(NotCachedOfflineError, match="offline mode is on"):
        manager(offline=True).download("qwen3-1.7b")


def test_bundled_wheel_models_resolve_offline():
    models = manager(offline=True)
    minilm = models.resolve("all-minilm-l6-v2")
    assert (minilm.path / "model.safetensors").exists()
    gemma = models.resolve("gemma-3-270m-gguf")
    assert gemma.format == "gguf" and gemma.path.suffix == ".gguf"


def test_catalog_covers_the_plugin_models():
    ids = {entry.id for entry in catalog.CATALOG}
    for size in ("2b", "4b", "8b"):
        for variant in ("instruct", "thinking"):
            entry = catalog.get(f"qwen3-vl-{size}-{variant}")
            assert entry.vision and entry.gguf[0].mmproj_pattern and entry.license == "Apache-2.0"
            assert entry.modelscope_repo and entry.hf_repo.startswith("Qwen/")
    assert {"qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-embedding-0.6b", "bge-reranker-base",
            "all-minilm-l6-v2"} <= ids
    with pytest.raises(KeyError, match="not in the model catalog"):
        catalog.get("gpt-5")


def test_trust_remote_code_is_off_unless_configured():
    assert not manager().trust_remote_code("qwen3-4b")
    assert manager(trust_remote_code=["Qwen/Qwen3-4B"]).trust_remote_code("qwen3-4b")


def test_modelscope_hub_is_used_when_chosen(monkeypatch, tmp_path, tiny_qwen3_path):
    """The ModelScope client is faked the same way (its snapshot_download + progress callbacks)."""
    import importlib

    # modelscope.hub re-exports the function under the module's name; patch the module itself.
    ms = importlib.import_module("modelscope.hub.snapshot_download")

    calls = []

    def fake_snapshot(model_id, *, allow_patterns=None, local_files_only=False, progress_callbacks=(), **kwargs):
        calls.append(model_id)
        target = tmp_path / "ms_cache" / model_id
        shutil.copytree(tiny_qwen3_path, target, dirs_exist_ok=True)
        for callback_class in progress_callbacks:
            size = (target / "model.safetensors").stat().st_size
            callback = callback_class("model.safetensors", size)
            callback.update(size)
            callback.end()
        return str(target)

    monkeypatch.setattr(ms, "snapshot_download", fake_snapshot)
    seen = []
    resolved = manager(hub="modelscope").download("qwen3-1.7b", progress=lambda d, t, m: seen.append((d, t)))
    assert calls == ["Qwen/Qwen3-1.7B"] and resolved.path == tmp_path / "ms_cache" / "Qwen/Qwen3-1.7B"
    assert seen[-1][0] == seen[-1][1] > 0
    assert manager().remove("qwen3-1.7b") == [resolved.path] and not resolved.path.exists()


def test_the_download_registry_keeps_every_record_when_writers_meet():
    """Downloads ending at once (two clicks, the web view and the CLI) each read, change and write the
    registry: under its lock no record is lost. Without it this loses records on most runs."""
    import threading

    managers = [manager(), manager()]  # two holders, as two processes would have
    start = threading.Barrier(len(managers))

    def remember(number: int, holder: ModelManager) -> None:
        start.wait()
        for i in range(40):
            holder._remember(f"model-{number}-{i}", {"transformers": f"/models/{number}/{i}"})

    threads = [threading.Thread(target=remember, args=(n, m)) for n, m in enumerate(managers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    registry = managers[0]._registry()
    assert len(registry) == 80 and registry["model-1-39"] == {"transformers": "/models/1/39"}


def test_a_view_can_ask_whether_a_model_is_downloading():
    from localqwen.storage.file_lock import FileLock

    models = manager()
    assert models.downloading("qwen3-0.6b") == ""
    lock = FileLock(models.paths.models_dir / ".downloading" / "huggingface_qwen3-0.6b.lock")
    assert lock.acquire(blocking=False)  # the download's own lock, as another process holds it
    try:
        assert models.downloading("Qwen/Qwen3-0.6B").startswith(f"pid {os.getpid()} on ")
        assert models.downloading("qwen3-0.6b", format="gguf") == ""  # another download
        assert models.downloading("qwen3-0.6b", hub="modelscope") == ""
    finally:
        lock.release()
    assert models.downloading("qwen3-0.6b") == ""
    assert models.downloading("all-minilm-l6-v2") == ""  # in a wheel: never downloads
