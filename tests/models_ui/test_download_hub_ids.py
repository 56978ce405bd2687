"""`localqwen models download` takes a hub repo id (owner/name) as well as a catalog id, and says
clearly when a name is neither. No network here: the no-network run points the real hub library at
a loopback port nothing listens on (a subprocess: huggingface_hub reads HF_ENDPOINT when imported),
so what is checked is that the id was accepted and the failure names the network, not the id."""

from __future__ import annotations

import os
import subprocess
import sys

from test_models_ui_cli import _closed_port
from typer.testing import CliRunner

from localqwen.cli.main import app

runner = CliRunner()
HUB_ID = "Qwen/Qwen2.5-0.5B-Instruct"  # a real repo the catalog does not list


def test_a_hub_id_is_downloaded_and_no_network_is_named(tmp_path, isolated_home):
    port = _closed_port()
    (isolated_home / "config").mkdir(parents=True, exist_ok=True)
    (isolated_home / "config" / "config.toml").write_text("[runtime]\noffline = false\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update({"HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_HUB_CACHE": str(tmp_path / "empty-cache"),
                "HF_HUB_ETAG_TIMEOUT": "5", "HF_HUB_DOWNLOAD_TIMEOUT": "5"})
    result = subprocess.run([sys.executable, "-m", "localqwen.cli.main", "models", "download", HUB_ID],
                            env=env, capture_output=True, text=True, timeout=120)
    text = " ".join(result.stderr.split())
    assert result.returncode == 1, result.stderr
    assert "not in the model catalog" not in text and "neither a catalog id" not in text
    assert f"could not reach huggingface at http://127.0.0.1:{port}" in text
    assert f"{HUB_ID} is not in its cache" in text
    # Its own advice is a command that now takes this id.
    assert f"`localqwen models download {HUB_ID}`" in text


def test_offline_mode_and_gguf_name_the_hub_id_and_its_quant(isolated_home, tmp_path, monkeypatch):
    (isolated_home / "config").mkdir(parents=True, exist_ok=True)
    (isolated_home / "config" / "config.toml").write_text("[runtime]\noffline = true\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    result = runner.invoke(app, ["models", "download", HUB_ID])
    text = " ".join(result.output.split())
    assert result.exit_code == 1
    assert f"{HUB_ID} is not in the huggingface cache" in text and "runtime.offline = true" in text
    gguf = runner.invoke(app, ["models", "download", f"{HUB_ID}-GGUF", "--gguf"])
    assert gguf.exit_code == 1
    assert f"`localqwen models download {HUB_ID}-GGUF --gguf --quant Q4_K_M`" in " ".join(gguf.output.split())


def test_a_name_that_is_neither_a_catalog_id_nor_a_hub_id_is_refused_before_any_download():
    for name, reason in [("qwen3-06b", "did you mean qwen3-0.6b?"), ("Qwen/Qwen3/0.6B", "has 2"),
                         ("Qwen/bad--name", "'--', '..' and a '.git' ending are not allowed"),
                         ("Qwen/Qwen 3", "'Qwen 3' is not a valid owner or name")]:
        result = runner.invoke(app, ["models", "download", name])
        text = " ".join(result.output.split())
        assert result.exit_code == 1, text
        assert f"error: {name!r} is neither a catalog id" in text and "owner/name" in text and reason in text
        assert "could not reach" not in text and "cache" not in text  # refused before the hub is asked


def test_catalog_ids_and_their_hub_repos_still_go_through_the_catalog(isolated_home, tmp_path, monkeypatch):
    (isolated_home / "config").mkdir(parents=True, exist_ok=True)
    (isolated_home / "config" / "config.toml").write_text("[runtime]\noffline = true\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    # The catalog's repo spelled as a hub id is the catalog model: its advice names the catalog id.
    result = runner.invoke(app, ["models", "download", "Qwen/Qwen3-0.6B"])
    assert result.exit_code == 1
    assert "`localqwen models download qwen3-0.6b`" in " ".join(result.output.split())
