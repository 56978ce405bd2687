"""The desktop build's entry script (packaging/localqwen_desktop.py) and launcher, run with the venv's
Python: the same dispatch the frozen app does (`-m MODULE` for job subprocesses, the desktop-icon
start, the CLI), and the first-run notice against real hub-cache folders. The frozen app itself is
checked by packaging/smoke_test.py after `make desktop`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "packaging" / "localqwen_desktop.py"
sys.path.insert(0, str(ROOT / "packaging"))

import desktop_launcher  # noqa: E402  (packaging/ is not a package: only the frozen build imports it)


def _entry(*args: str, tmp_path: Path, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ENTRY), *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, stdin=subprocess.DEVNULL, check=False, **kwargs)


def test_dash_m_runs_a_module_like_python_does(tmp_path):
    """The training job subprocess is `sys.executable -m localqwen.cli.main train ...`; `accelerate
    launch` adds `-u`. The entry script must run the module with its arguments and exit code."""
    data = tmp_path / "in.json"
    data.write_text('{"b": 1, "a": [2]}')
    result = _entry("-u", "-m", "json.tool", "--sort-keys", str(data), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"a": [2], "b": 1} and result.stdout.index('"a"') < result.stdout.index('"b"')

    failing = _entry("-m", "json.tool", str(tmp_path / "missing.json"), tmp_path=tmp_path)
    assert failing.returncode != 0 and "missing.json" in failing.stderr


def test_dash_m_reaches_the_localqwen_cli(tmp_path):
    result = _entry("-m", "localqwen.cli.main", "plugins", "--no-load", "--json", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {"captioner", "trainer"} <= {plugin["id"] for plugin in json.loads(result.stdout)}


def test_interpreter_flags_without_a_module_are_refused(tmp_path):
    result = _entry("-u", "plugins", tmp_path=tmp_path)
    assert result.returncode != 0 and "expected '-m MODULE [ARGS]'" in result.stderr
    assert _entry("-m", tmp_path=tmp_path).returncode != 0


def test_plain_arguments_go_to_the_cli(tmp_path):
    result = _entry("--help", tmp_path=tmp_path)
    assert result.returncode == 0 and "plugins" in result.stdout and "web" in result.stdout


def test_a_start_without_terminal_or_with_the_desktop_flag_opens_the_browser(monkeypatch):
    class NoTty:
        def isatty(self) -> bool:
            return False

    class Tty(NoTty):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", NoTty())
    assert desktop_launcher.should_open_browser([])
    assert desktop_launcher.should_open_browser(["--desktop"])
    assert not desktop_launcher.should_open_browser(["tui"])
    monkeypatch.setattr(sys, "stdin", Tty())
    assert not desktop_launcher.should_open_browser([])  # a terminal: the TUI, as `localqwen` always does
    assert desktop_launcher.should_open_browser(["--desktop"])
    monkeypatch.setattr(sys, "stdin", None)  # pythonw / a Windows GUI start has no stdin at all
    assert desktop_launcher.should_open_browser([])


def _hub_env(monkeypatch, tmp_path: Path) -> Path:
    hf = tmp_path / "hf" / "hub"
    hf.mkdir(parents=True)
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(hf))
    monkeypatch.setenv("MODELSCOPE_CACHE", str(tmp_path / "ms"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # ~/.cache/modelscope is looked at too
    return hf


def test_first_run_without_models_says_what_to_download(monkeypatch, tmp_path):
    hf = _hub_env(monkeypatch, tmp_path)
    text = "\n".join(desktop_launcher.first_run_notice())
    assert "No Qwen model was found" in text and str(hf) in text
    assert "localqwen models download qwen3-vl-2b-instruct" in text


def test_first_run_lists_models_already_in_the_hugging_face_cache(monkeypatch, tmp_path):
    hf = _hub_env(monkeypatch, tmp_path)
    snapshot = hf / "models--Qwen--Qwen3-0.6B" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}))
    (snapshot / "model.safetensors").write_bytes(b"\0" * 2048)
    (hf / "models--Qwen--Qwen3-0.6B" / "refs").mkdir()
    (hf / "models--Qwen--Qwen3-0.6B" / "refs" / "main").write_text("abc123")
    lines = desktop_launcher.first_run_notice()
    assert lines[0].startswith("Models found in the hub caches")
    assert any("Qwen/Qwen3-0.6B" in line and "(huggingface)" in line for line in lines[1:])
