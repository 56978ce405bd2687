"""Finding models in the Hugging Face and ModelScope caches, laid out the way each hub writes them.

The caches are built from real model files (the tiny Qwen3 folder, the tiny GGUFs) with the
hubs' own layouts (HF: blobs + snapshot symlinks + refs/main; ModelScope: owner/name with dots
written as ``___``), and what is found must load through the model manager's local-path checks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from localqwen.runtime import hub_cache

GGUF_DATA = Path(__file__).parents[1] / "runtime" / "data"


def _hf_repo(cache: Path, repo: str, files: dict[str, Path], revision: str = "abc123") -> Path:
    """A repo in Hugging Face's cache layout: files in blobs/, linked from snapshots/<rev>/."""
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (repo_dir / "blobs").mkdir()
    for index, (name, source) in enumerate(files.items()):
        blob = repo_dir / "blobs" / f"blob{index}"
        os.symlink(source.resolve(), blob)
        os.symlink(blob, snapshot / name)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(revision)
    return snapshot


@pytest.fixture
def caches(tmp_path, monkeypatch, tiny_qwen3_path):
    hf = tmp_path / "hf" / "hub"
    ms = tmp_path / "ms"
    monkeypatch.setenv("HF_HUB_CACHE", str(hf))
    monkeypatch.setenv("MODELSCOPE_CACHE", str(ms))
    model_files = {p.name: p for p in tiny_qwen3_path.iterdir() if p.is_file()}
    _hf_repo(hf, "Qwen/Qwen3-0.6B", model_files)
    _hf_repo(hf, "someone/tiny-vl-GGUF", {
        "tiny-qwen3vl-f32.gguf": GGUF_DATA / "tiny-qwen3vl-f32.gguf",
        "mmproj-tiny-qwen3vl-f32.gguf": GGUF_DATA / "mmproj-tiny-qwen3vl-f32.gguf"})
    # An embedder: in the cache, but not something a chat can use.
    embedder = tmp_path / "embedder"
    embedder.mkdir()
    (embedder / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    (embedder / "model.safetensors").write_bytes((tiny_qwen3_path / "model.safetensors").read_bytes()[:4096])
    _hf_repo(hf, "sentence-transformers/mini", {p.name: p for p in embedder.iterdir()})
    # A download that never finished: the blob link points nowhere.
    broken = _hf_repo(hf, "Qwen/Broken", {"config.json": tiny_qwen3_path / "config.json"})
    os.symlink(tmp_path / "missing-blob", broken / "model.safetensors")
    # ModelScope: models/owner/name, dots written as ___.
    ms_model = ms / "models" / "Qwen" / "Qwen3-0___6B-GGUF"
    ms_model.mkdir(parents=True)
    os.symlink((GGUF_DATA / "tiny-qwen3-toolcall-f32.gguf").resolve(), ms_model / "Qwen3-0.6B-Q8_0.gguf")
    return hf, ms


def test_finds_complete_models_in_both_caches_with_kind_and_format(caches):
    found = {(m.hub, m.repo, m.format): m for m in hub_cache.cached_models()}
    assert set(found) == {
        ("huggingface", "Qwen/Qwen3-0.6B", "transformers"),
        ("huggingface", "someone/tiny-vl-GGUF", "gguf"),
        ("huggingface", "sentence-transformers/mini", "transformers"),
        ("modelscope", "Qwen/Qwen3-0.6B-GGUF", "gguf"),
    }  # the broken download is not offered; the mmproj file is not a model of its own
    assert found["huggingface", "Qwen/Qwen3-0.6B", "transformers"].kind == "text"
    assert found["huggingface", "someone/tiny-vl-GGUF", "gguf"].kind == "vision"
    assert found["huggingface", "sentence-transformers/mini", "transformers"].kind == "other"
    generative = {(m.hub, m.repo) for m in hub_cache.cached_models(generative_only=True)}
    assert ("huggingface", "sentence-transformers/mini") not in generative
    assert "Qwen/Qwen3-0.6B" in found["huggingface", "Qwen/Qwen3-0.6B", "transformers"].label


def test_what_is_found_loads_through_the_model_manager(caches):
    from localqwen.config import Config
    from localqwen.paths import app_paths
    from localqwen.runtime.model_manager import ModelManager

    manager = ModelManager(app_paths(), Config())
    for model in hub_cache.cached_models(generative_only=True):
        resolved = manager.resolve(str(model.path), download=False)
        assert resolved.format == model.format
        if model.kind == "vision":
            assert resolved.mmproj is not None and resolved.mmproj.name.startswith("mmproj")


def test_cache_locations_follow_each_hubs_environment_rules(monkeypatch, tmp_path):
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "MODELSCOPE_CACHE"):
        monkeypatch.delenv(name, raising=False)
    assert hub_cache.huggingface_cache_dir() == Path.home() / ".cache" / "huggingface" / "hub"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub_cache.huggingface_cache_dir() == tmp_path / "xdg" / "huggingface" / "hub"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hfhome"))
    assert hub_cache.huggingface_cache_dir() == tmp_path / "hfhome" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "direct"))
    assert hub_cache.huggingface_cache_dir() == tmp_path / "direct"
    assert hub_cache.modelscope_cache_dirs()[0] == Path.home() / ".cache" / "modelscope" / "hub"
    monkeypatch.setenv("MODELSCOPE_CACHE", str(tmp_path / "ms"))
    assert hub_cache.modelscope_cache_dirs() == [tmp_path / "ms"]


def test_missing_caches_give_nothing_and_an_unknown_hub_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "none"))
    monkeypatch.setenv("MODELSCOPE_CACHE", str(tmp_path / "none2"))
    assert hub_cache.cached_models() == []
    with pytest.raises(ValueError, match="unknown hub 'civitai'"):
        hub_cache.cached_models(hubs=("civitai",))
