import sys

import pytest

from localqwen.plugin_api import PluginHost, PluginLoadError


def test_listing_reads_metadata_without_importing(test_plugins):
    sys.modules.pop("lq_test_plugin", None)
    names = [info.name for info in PluginHost().available()]
    assert {"testplug", "broken_import", "broken_register"} <= set(names)
    assert "lq_test_plugin" not in sys.modules


def test_broken_plugins_are_reported_and_skipped(test_plugins):
    host = PluginHost()
    loaded = {p.id for p in host.load_all()}
    assert "testplug" in loaded
    assert "broken_import" in host.failures and "ModuleNotFoundError" in host.failures["broken_import"].reason
    assert "missing frobnicator" in host.failures["broken_register"].reason
    with pytest.raises(PluginLoadError, match="broken_register"):
        host.get("broken_register")


def test_only_env_limits_plugins(test_plugins, monkeypatch):
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "testplug")
    assert [info.name for info in PluginHost().available()] == ["testplug"]


def test_third_party_switch_off(test_plugins, monkeypatch):
    monkeypatch.setenv("LOCALQWEN_NO_THIRD_PARTY_PLUGINS", "1")
    assert "testplug" not in [info.name for info in PluginHost().available()]


def test_unknown_plugin_names_the_known_ones(test_plugins):
    with pytest.raises(KeyError, match="testplug"):
        PluginHost().get("nope")


def test_actions_are_collected_in_order(test_plugins):
    plugin = PluginHost().get("testplug")
    assert [a.id for a in plugin.actions()] == ["echo", "slow", "fail"]
    with pytest.raises(KeyError, match="echo, slow, fail"):
        plugin.action("missing")
