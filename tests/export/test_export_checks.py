"""GGUF export: what it refuses and why (before any work), the converter's unpacking and its errors,
cancelling, and the same export from the CLI and the trainer plugin's action."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localqwen.cli.main import app
from localqwen.training import llama_converter
from localqwen.training.gguf_export import ExportError, check_quants, export_gguf, inspect_source
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import Cancelled, CancelToken


def test_quant_types_are_llama_cpps_own_and_bad_ones_are_named():
    assert check_quants(["q4_k_m", "Q8_0", "f16", "Q4_K_M"]) == ["Q4_K_M", "Q8_0", "F16"]
    with pytest.raises(ValueError, match="unknown GGUF quantization 'Q9_X'.*Q4_K_M.*Q8_0"):
        check_quants(["Q9_X"])
    with pytest.raises(ValueError, match="IQ2_XXS needs an importance matrix"):
        check_quants(["IQ2_XXS"])
    with pytest.raises(ValueError, match="at least one"):
        check_quants([])


def _moe_lora_adapter(base: Path, folder: Path) -> Path:
    from localqwen.adapters import apply_adapter, save_adapter
    from localqwen.training.modeling import load_model_and_processor

    model, _, _ = load_model_and_processor(base, precision="fp32")
    save_adapter(apply_adapter(model, "moe-lora", {}).model, folder)
    return folder


def test_an_unmergeable_adapter_is_refused_with_the_reason_before_any_work(tmp_path, tiny_qwen3_path):
    adapter = _moe_lora_adapter(tiny_qwen3_path, tmp_path / "moe")
    plan = inspect_source(adapter, base=tiny_qwen3_path)
    assert plan.kind == "adapter" and plan.method == "moe-lora" and not plan.mergeable
    assert "routes each token between several expert adapters" in plan.reason
    with pytest.raises(ExportError, match="cannot export moe-lora adapter.*--base-only"):
        export_gguf(adapter, tmp_path / "out", ["Q4_K_M"], base=tiny_qwen3_path)
    assert not (tmp_path / "out").exists()  # refused before any file was made
    with pytest.raises(ExportError, match="does not say which base model"):
        inspect_source(adapter)  # our own adapter folders do not name their base


def test_sources_that_are_not_models_are_named(tmp_path):
    with pytest.raises(ExportError, match="no such folder"):
        inspect_source(tmp_path / "missing")
    with pytest.raises(ExportError, match="holds no model .config.json., adapter"):
        inspect_source(tmp_path)


def _sdist(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_converter_is_unpacked_from_the_sdist_taking_only_its_files(tmp_path, monkeypatch):
    monkeypatch.setattr(llama_converter, "candidate_dirs", lambda version: [tmp_path / "share" / f"llama.cpp-{version}"])
    top = "llama_cpp_python-9.9.9/vendor/llama.cpp/"
    archive = _sdist(tmp_path / "sdist.tar.gz", {
        top + "convert_hf_to_gguf.py": b"print('converter')\n",
        top + "conversion/base.py": b"",
        top + "gguf-py/gguf/__init__.py": b"",
        top + "src/llama.cpp": b"// C++ sources are not needed",
        "llama_cpp_python-9.9.9/llama_cpp/__init__.py": b"",
    })
    folder = llama_converter.unpack_converter(archive, "9.9.9")
    assert folder == tmp_path / "share" / "llama.cpp-9.9.9" and llama_converter.is_converter_dir(folder)
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "conversion/base.py", "convert_hf_to_gguf.py", "gguf-py/gguf/__init__.py"]

    hostile = _sdist(tmp_path / "hostile.tar.gz", {top + "convert_hf_to_gguf.py": b"",
                                                   top + "conversion/../../../../escape.py": b"must not land"})
    with pytest.raises(llama_converter.ConverterNotFound, match="unsafe path"):
        llama_converter.unpack_converter(hostile, "6.6.6")
    assert not list(tmp_path.parent.rglob("escape.py")) and not (tmp_path / "share" / "llama.cpp-6.6.6").exists()

    broken = _sdist(tmp_path / "old.tar.gz", {"llama_cpp_python-1.0/vendor/llama.cpp/README.md": b""})
    with pytest.raises(llama_converter.ConverterNotFound, match="has no vendor/llama.cpp/convert_hf_to_gguf.py"):
        llama_converter.unpack_converter(broken, "1.0")


def test_an_unreachable_sdist_says_what_to_do(tmp_path, monkeypatch):
    # pip against a closed local port, without its cache: what a first export offline meets.
    for key, value in {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_CACHE_DIR": "1", "PIP_RETRIES": "0",
                       "PIP_TIMEOUT": "2", "PIP_FIND_LINKS": "", "PIP_NO_INDEX": ""}.items():
        monkeypatch.setenv(key, value) if value else monkeypatch.delenv(key, raising=False)
    with pytest.raises(llama_converter.ConverterNotFound,
                       match="llama-cpp-python 0.0.1 source distribution.*pip could not fetch it.*make setup.*LLAMA_CPP_DIR"):
        llama_converter.fetch_converter("0.0.1")


def test_the_cli_and_the_plugin_action_report_bad_input(tmp_path, tiny_qwen3_path):
    runner = CliRunner()
    result = runner.invoke(app, ["models", "export", str(tiny_qwen3_path), "--quant", "Q9_X", "--output-dir",
                                 str(tmp_path / "out")])
    assert result.exit_code == 2 and "unknown GGUF quantization 'Q9_X'" in result.output
    result = runner.invoke(app, ["models", "export", str(tmp_path / "nothing"), "--json"])
    done = json.loads(result.output.strip().splitlines()[-1])
    assert result.exit_code == 1 and done["status"] == "failed" and "no such folder" in done["summary"]

    from localqwen.app import Workbench

    events = list(Workbench.create().run("trainer", "export", {"source": str(tmp_path), "quants": "Q4_K_M"}))
    assert events[-1].status == "failed" and "holds no model" in events[-1].summary


@pytest.mark.slow
def test_cancel_stops_the_export_and_removes_partial_files(tmp_path, tiny_qwen3_path):
    cancel = CancelToken()

    def stop_at_first_progress(event):
        if isinstance(event, ev.Progress):
            cancel.cancel("stopped by the test")

    with pytest.raises(Cancelled, match="stopped by the test"):
        export_gguf(tiny_qwen3_path, tmp_path / "out", ["Q4_K_M"], progress=stop_at_first_progress, cancel=cancel)
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.slow
def test_base_only_exports_the_base_of_an_unmergeable_adapter_from_the_cli(tmp_path, tiny_qwen3_path):
    adapter = _moe_lora_adapter(tiny_qwen3_path, tmp_path / "moe")
    result = CliRunner().invoke(app, ["models", "export", str(adapter), "--base", str(tiny_qwen3_path), "--base-only",
                                      "--quant", "F16", "--output-dir", str(tmp_path / "out"), "--name", "base",
                                      "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.strip().splitlines()]
    assert any(e["kind"] == "warning" and "base model" in e["message"] and "moe-lora" in e["message"] for e in lines)
    assert lines[-1]["result"]["base_only"] is True
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["base-F16.gguf", "base-README.md", "base.Modelfile"]


def test_a_training_run_names_its_base_and_method(tmp_path, tiny_qwen3_path):
    from localqwen.adapters.io import write_meta
    from localqwen.training.config import parse_job_config, save_job_config

    def run(method: str) -> Path:
        folder = tmp_path / f"run-{method}"
        config = parse_job_config({"output_dir": str(folder), "model": {"path": str(tiny_qwen3_path)},
                                   "data": {"train": str(tmp_path / "train.jsonl")}, "method": {"name": method}})
        save_job_config(config, folder / "job.toml")
        (folder / "final").mkdir(parents=True)
        return folder

    lora = run("lora")
    (lora / "final" / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    plan = inspect_source(lora)
    assert (plan.kind, plan.method, plan.mergeable, plan.name) == ("adapter", "lora", True, "run-lora")
    assert plan.base == tiny_qwen3_path and plan.adapter == lora / "final"

    moe = run("mot-lora")
    write_meta(moe / "final", {"method": "mot-lora"})
    plan = inspect_source(moe / "final")  # the final/ folder itself: named after its run
    assert plan.name == "run-mot-lora" and not plan.mergeable and "mot-lora routes each token" in plan.reason

    full = run("full")
    for item in tiny_qwen3_path.iterdir():
        (full / "final" / item.name).write_bytes(item.read_bytes())
    plan = inspect_source(full)
    assert plan.kind == "model" and plan.model_dir == full / "final" and plan.architectures == ["Qwen3ForCausalLM"]
