"""The command line parts of issue 17: `run --help`, checkbox defaults, `config edit` sections,
download errors that say what failed (offline switch, no network) and the captioner's output.

"No network" is simulated at the boundary: the hub endpoint is a loopback port nothing listens
on, so the real hub library really fails to connect, and the internet is never reached. Those
runs are real subprocesses: huggingface_hub reads HF_ENDPOINT / HF_HUB_OFFLINE when imported.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localqwen.cli.main import app

runner = CliRunner()


def test_run_help_prints_help_and_the_plugins():
    result = runner.invoke(app, ["run", "--help"])
    assert result.exit_code == 0, result.output
    assert "no plugin named" not in result.output
    assert "PLUGIN" in result.output and "Plugins: " in result.output and "captioner" in result.output
    assert runner.invoke(app, ["run", "-h"]).exit_code == 0


def test_checkbox_options_show_their_default_in_help():
    result = runner.invoke(app, ["run", "captioner", "caption", "--help"])
    assert result.exit_code == 0, result.output
    text = "".join(result.output.split())  # help wraps lines, even inside a flag
    assert "--resume/--no-resume" in text and "(default:--resume)" in text
    assert "(default:--no-write-txt)" in text


def test_config_edit_writes_a_section_for_the_chat_and_the_captioner(isolated_home, monkeypatch):
    monkeypatch.setenv("EDITOR", "true")  # the editor opens and closes: the created file is what we check
    result = runner.invoke(app, ["config", "edit"])
    assert result.exit_code == 0, result.output
    text = (isolated_home / "config" / "config.toml").read_text()
    for section in ("[plugins.chat]", "[plugins.captioner]"):
        assert section in text
    captioner = text.split("[plugins.captioner]", 1)[1].split("\n[", 1)[0]
    assert 'model = ""' in captioner
    chat = text.split("[plugins.chat]", 1)[1].split("\n[", 1)[0]
    assert "max_new_tokens = 1024" in chat and "temperature = 0.0" in chat


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed when the socket is: connecting is refused


def _download(tmp_path: Path, *, offline_config: bool, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    home = Path(os.environ["LOCALQWEN_HOME"])
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(f"[runtime]\noffline = {'true' if offline_config else 'false'}\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    clean.update({"HF_HUB_CACHE": str(tmp_path / "empty-cache"), "HF_HUB_ETAG_TIMEOUT": "5",
                  "HF_HUB_DOWNLOAD_TIMEOUT": "5", **env})
    return subprocess.run([sys.executable, "-m", "localqwen.cli.main", "models", "download", "qwen3-0.6b"],
                          env=clean, capture_output=True, text=True, timeout=120)


def test_no_network_says_the_hub_was_unreachable_not_offline_mode(tmp_path):
    port = _closed_port()
    result = _download(tmp_path, offline_config=False, env={"HF_ENDPOINT": f"http://127.0.0.1:{port}"})
    text = " ".join(result.stderr.split())
    assert result.returncode == 1, result.stderr
    assert f"could not reach huggingface at http://127.0.0.1:{port}" in text
    assert "not in its cache" in text and "offline mode" not in text
    assert "`localqwen models download qwen3-0.6b`" in text  # the catalog id the user typed, not the repo


def test_the_hubs_own_offline_switch_is_named(tmp_path):
    result = _download(tmp_path, offline_config=False, env={"HF_HUB_OFFLINE": "1"})
    text = " ".join(result.stderr.split())
    assert result.returncode == 1, result.stderr
    assert "HF_HUB_OFFLINE=1" in text and "runtime.offline is false" in text and "unset it" in text


def test_localqwen_offline_mode_suggests_the_catalog_id(isolated_home, tmp_path, monkeypatch):
    (isolated_home / "config").mkdir(parents=True, exist_ok=True)
    (isolated_home / "config" / "config.toml").write_text("[runtime]\noffline = true\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    result = runner.invoke(app, ["models", "download", "qwen3-0.6b"])
    text = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "runtime.offline = true" in text and "`localqwen models download qwen3-0.6b`" in text
    assert "models download Qwen/" not in text
    gguf = runner.invoke(app, ["models", "download", "qwen3-0.6b", "--gguf"])
    assert "`localqwen models download qwen3-0.6b --gguf --quant" in " ".join(gguf.output.split())


def _images(root: Path) -> Path:
    from PIL import Image

    root.mkdir()
    Image.new("RGB", (64, 64), "red").save(root / "photo.jpg")
    Image.new("RGB", (64, 64), "blue").save(root / "photo.png")  # same stem: previews must stay apart
    return root


def _talking_adapter(tiny_qwen3_vl_path: Path, folder: Path) -> Path:
    """A random LoRA adapter: with it the tiny model says something (bare, it answers with nothing,
    which the captioner records as a failed caption)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(1)
    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_vl_path)
    config = LoraConfig(r=8, lora_alpha=64, target_modules=["q_proj", "v_proj", "o_proj"], init_lora_weights=False)
    get_peft_model(model, config).save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_captioner_prints_each_caption_once_and_names_previews_plainly(tmp_path, tiny_qwen3_vl_path, isolated_home):
    folder = _images(tmp_path / "imgs")
    adapter = _talking_adapter(tiny_qwen3_vl_path, tmp_path / "adapter")
    args = ["run", "captioner", "caption", "--source", str(folder), "--model", str(tiny_qwen3_vl_path),
            "--adapter", str(adapter), "--max-new-tokens", "16", "--output-dir", str(tmp_path / "out")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = result.stdout
    # Which model answers: one line (stderr, with the other status lines) before the work.
    assert f"Model: {tiny_qwen3_vl_path.name} (transformers, cpu)" in " ".join(result.output.split())
    for key in ("photo.jpg", "photo.png"):
        assert sum(line.startswith(f"{key}: ") for line in out.splitlines()) == 1, out
    assert "\nimage " not in "\n" + out  # no raw per-image lines; one summary line instead
    assert "2 images:" in out
    (folder_of_previews,) = (isolated_home / "data" / "outputs" / "captioner" / "previews").iterdir()
    assert sorted(p.name for p in folder_of_previews.iterdir()) == ["photo.jpg", "photo_png.jpg"]
    assert folder_of_previews.name in "".join(out.split())  # the summary line names the folder
    # A second run resumes: nothing is streamed again, the table lists what earlier runs captioned.
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "Captions from earlier runs" in again.stdout and sum(
        line.startswith("photo.jpg: ") for line in again.stdout.splitlines()) == 0


def test_terminal_chat_takes_generation_settings_and_names_the_model(isolated_home, tiny_qwen3_path):
    import json

    (isolated_home / "config").mkdir(parents=True, exist_ok=True)
    (isolated_home / "config" / "config.toml").write_text(f'[plugins.chat]\nmodel = "{tiny_qwen3_path}"\n')
    result = runner.invoke(app, ["chat", "--max-tokens", "3", "--json"], input="hello\n/exit\n")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    done = next(event for event in events if event["kind"] == "done")
    assert done["result"]["completion_tokens"] == 3  # --max-tokens reached the engine
    assert done["result"]["answered_by"] == f"{tiny_qwen3_path.name} (transformers, cpu)"
    assert any(e["kind"] == "log" and e["message"].startswith("Model: ") for e in events)
    bad = runner.invoke(app, ["chat", "--temperature", "5"], input="/exit\n")
    assert bad.exit_code == 2 and "temperature must be from 0 to 2" in " ".join(bad.output.split())
