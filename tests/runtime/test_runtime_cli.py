"""`localqwen doctor`, `localqwen models ...` and `localqwen dev tiny-model` through the real CLI app."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from localqwen.cli.main import app
from localqwen.runtime import catalog

runner = CliRunner()


def test_doctor_explains_a_plan_for_every_catalog_model():
    result = runner.invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["host"]["cpu_cores"] >= 1
    assert [plan["model_id"] for plan in report["plans"]] == [entry.id for entry in catalog.CATALOG]
    assert all(plan["reasons"] for plan in report["plans"])
    text = runner.invoke(app, ["doctor"])
    assert text.exit_code == 0 and "CUDA:" in text.output and "qwen3-vl-8b-thinking for vision" in text.output


def test_models_list_and_path():
    listed = runner.invoke(app, ["models", "list", "--json"])
    rows = {row["id"]: row for row in json.loads(listed.output)}
    assert rows["all-minilm-l6-v2"]["status"] == "bundled"
    assert rows["qwen3-vl-2b-instruct"]["status"] == "not downloaded"
    missing = runner.invoke(app, ["models", "path", "qwen3-4b"])
    assert missing.exit_code == 1 and "models download qwen3-4b" in missing.output
    bundled = runner.invoke(app, ["models", "path", "all-minilm-l6-v2"])
    assert bundled.exit_code == 0 and bundled.output.strip().endswith("model")
    unknown = runner.invoke(app, ["models", "remove", "nope"])
    assert unknown.exit_code == 1 and "not in the model catalog" in unknown.output
    nothing = runner.invoke(app, ["models", "remove", "qwen3-4b"])
    assert nothing.exit_code == 0 and "nothing removed" in nothing.output


def test_models_download_offline_fails_clearly(monkeypatch, tmp_path, isolated_home):
    (isolated_home / "config").mkdir(parents=True, exist_ok=True)
    (isolated_home / "config" / "config.toml").write_text("[runtime]\noffline = true\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    result = runner.invoke(app, ["models", "download", "qwen3-0.6b"])
    assert result.exit_code == 1 and "offline mode is on" in result.output


def test_dev_tiny_model_builds_a_loadable_folder(tmp_path):
    from transformers import AutoConfig

    result = runner.invoke(app, ["dev", "tiny-model", str(tmp_path / "tiny")])
    assert result.exit_code == 0, result.output
    assert AutoConfig.from_pretrained(tmp_path / "tiny").model_type == "qwen3"
    again = runner.invoke(app, ["dev", "tiny-model", str(tmp_path / "tiny")])
    assert again.exit_code == 1 and "not empty" in again.output
