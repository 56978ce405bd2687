"""Issue 16, item 6: a broken config says what is wrong and where, on every command.

A ``config.toml`` that is a folder gave a traceback on every command; a wrong type in a plugin
section surfaced later as a raw pydantic error without the file; ``max_file_mb = -1`` was taken.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from localqwen.config import ConfigError, load_config


def _config_file(home):
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_a_config_folder_is_reported_not_a_traceback(isolated_home):
    folder = _config_file(isolated_home)
    folder.mkdir()
    config, error = load_config(folder)
    assert config.runtime.trust_remote_code == [] and error is not None
    assert "is a folder, but the config must be a file" in str(error) and str(folder) in str(error)
    with pytest.raises(ConfigError, match="is a folder"):
        load_config(folder, strict=True)


COMMANDS = [["plugins"], ["models", "list"], ["run", "rag", "knowledge-bases"], ["config", "show"], ["config", "edit"]]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_command_names_a_config_folder(isolated_home, command):
    _config_file(isolated_home).mkdir()
    completed = subprocess.run([sys.executable, "-m", "localqwen.cli.main", *command], capture_output=True,
                               text=True, timeout=120)
    assert "Traceback" not in completed.stderr, completed.stderr[-2000:]
    assert "config.toml" in completed.stderr and "is a folder" in completed.stderr
    # config show/edit are about the file itself, so they fail; the rest go on with the defaults.
    assert completed.returncode == (1 if command[0] == "config" else 0), completed.stderr[-2000:]


def test_setting_a_value_in_a_config_folder_is_a_clear_error(isolated_home):
    from localqwen.app import Workbench

    _config_file(isolated_home).mkdir()
    bench = Workbench.create()
    with pytest.raises(ConfigError, match="is a folder"):
        bench.set_config("app", "language", "en")


@pytest.mark.parametrize(("line", "message"), [
    ('max_file_mb = "lots"', r"plugins\.rag\.max_file_mb: Input should be a valid integer.*'lots'"),
    ("max_file_mb = -1", r"plugins\.rag\.max_file_mb: Input should be greater than or equal to 1.*-1"),
    ("allowed_roots = 3", r"plugins\.rag\.allowed_roots: Input should be a valid list"),
], ids=["not a number", "negative size", "not a list"])
def test_a_wrong_plugin_setting_names_the_file_key_and_line(isolated_home, tmp_path, line, message):
    from localqwen.app import Workbench
    from localqwen.plugin_api import events as ev

    config_file = _config_file(isolated_home)
    config_file.write_text(f'[app]\nlanguage = "en"\n\n[plugins.memory]\nmax_file_mb = 5\n\n[plugins.rag]\n'
                           f'model = ""\n{line}\n')
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\nSomething to index.\n")
    done = list(Workbench.create().run("rag", "add-documents", {"paths": [str(doc)]}))[-1]
    assert isinstance(done, ev.Done) and done.status == "failed"
    assert done.summary.startswith(f"{config_file}:9: ") or f"{config_file}:9: " in done.summary, done.summary
    assert re.search(message, done.summary), done.summary


def test_the_knowledge_base_refuses_a_size_limit_that_is_not_positive(tmp_path):
    from localqwen.app import Workbench
    from localqwen.retrieval.knowledge_base import KnowledgeBaseError, KnowledgeBaseManager

    services = Workbench.create().services
    with pytest.raises(KnowledgeBaseError, match="must be positive, got -1048576 bytes"):
        KnowledgeBaseManager(services.database, tmp_path / "kb", max_file_bytes=-2**20)
