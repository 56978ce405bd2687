"""The metadata-only plugin list (what the TUI paints its first frame from) is the host's list."""

from __future__ import annotations

import json
import subprocess
import sys

from localqwen.plugin_api import PluginHost
from localqwen.vocabulary.plugin_index import offered_plugins, only_from_env, third_party_from_env


def _from_metadata() -> list[tuple[str, str, str]]:
    return [(i.name, i.target, i.distribution)
            for i in offered_plugins(only=only_from_env(), third_party=third_party_from_env())]


def _from_host() -> list[tuple[str, str, str]]:
    return [(i.name, i.target, i.distribution) for i in PluginHost().available()]


def test_same_plugins_as_the_host_under_every_switch(test_plugins, monkeypatch):
    assert "testplug" in [name for name, _, _ in _from_metadata()]
    assert _from_metadata() == _from_host()
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "testplug, chat")
    assert [name for name, _, _ in _from_metadata()] == ["chat", "testplug"]
    assert _from_metadata() == _from_host()
    monkeypatch.delenv("LOCALQWEN_PLUGINS")
    monkeypatch.setenv("LOCALQWEN_NO_THIRD_PARTY_PLUGINS", "1")
    assert "testplug" not in [name for name, _, _ in _from_metadata()]
    assert _from_metadata() == _from_host()


def test_listing_imports_nothing_of_the_plugin_api_or_pydantic():
    probe = ("from localqwen.vocabulary.plugin_index import offered_plugins\noffered_plugins()\n"
             "import json, sys\nprint(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    assert not {"pydantic", "localqwen.plugin_api", "localqwen.config"} & loaded
    assert not any(name.startswith("localqwen_") for name in loaded)  # no plugin imported
