"""Install test plugins as a real distribution with entry points, without pip.

Writes a ``*.dist-info`` folder on a directory that is put on ``sys.path`` (and PYTHONPATH for
subprocesses), which is exactly how importlib.metadata finds a pip-installed plugin.
"""

from __future__ import annotations

from pathlib import Path

SUPPORT_DIR = Path(__file__).resolve().parent

TEST_ENTRY_POINTS = {
    "testplug": "lq_test_plugin:EchoPlugin",
    "parrot": "lq_chat_plugin:ParrotChat",  # a chat with no frontend code
    "broken_import": "lq_module_that_does_not_exist:Plugin",
    "broken_register": "lq_test_plugin:BrokenAtRegistration",
}


def write_distribution(site: Path, name: str = "lq-test-plugins", entry_points: dict[str, str] | None = None) -> Path:
    dist_info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = ["[localqwen.plugins]"] + [f"{k} = {v}" for k, v in (entry_points or TEST_ENTRY_POINTS).items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return dist_info
