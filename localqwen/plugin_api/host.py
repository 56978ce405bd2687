"""Finding and loading plugins.

Built-in plugins register through the same ``localqwen.plugins`` entry-point group a
third-party ``pip install``-ed plugin uses. Listing reads entry-point metadata only; a plugin is
imported when it is first needed. One that fails to import or to register is recorded by name
with the reason and skipped: the host keeps running.

Environment switches:
- ``LOCALQWEN_PLUGINS=captioner,rag`` loads only these plugins.
- ``LOCALQWEN_NO_THIRD_PARTY_PLUGINS=1`` ignores plugins not shipped with LocalQwen (tests use it).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from importlib import metadata

from localqwen.plugin_api.extensions import Extensions
from localqwen.plugin_api.plugin import Plugin

# Discovery (entry points, environment switches) lives on the ground floor so the TUI's first frame
# can list plugins without importing this package; the host re-exports it.
from localqwen.vocabulary.plugin_index import (
    BUILTIN_DISTRIBUTION,
    ENTRY_POINT_GROUP,
    NO_THIRD_PARTY_ENV,
    ONLY_ENV,
    PluginInfo,
    offered_plugins,
    only_from_env,
    third_party_from_env,
)

__all__ = ["BUILTIN_DISTRIBUTION", "ENTRY_POINT_GROUP", "NO_THIRD_PARTY_ENV", "ONLY_ENV", "PluginFailure",
           "PluginHost", "PluginInfo", "PluginLoadError"]


@dataclass(frozen=True)
class PluginFailure:
    name: str
    reason: str
    traceback: str = ""


class PluginHost:
    def __init__(
        self,
        *,
        only: set[str] | None = None,
        third_party: bool | None = None,
        use_entry_points: bool = True,
    ) -> None:
        if only is None:
            only = only_from_env()
        if third_party is None:
            third_party = third_party_from_env()
        self._only = only
        self._third_party = third_party
        self._use_entry_points = use_entry_points
        self._loaded: dict[str, Plugin] = {}
        self._extra: dict[str, type[Plugin]] = {}
        self.failures: dict[str, PluginFailure] = {}

    # -- registration -------------------------------------------------------------------------
    def add(self, plugin_cls: type[Plugin]) -> Plugin | None:
        """Register a plugin class directly (embedding LocalQwen, or tests); None if it fails."""
        self._extra[plugin_cls.id] = plugin_cls
        return self._instantiate(plugin_cls.id, plugin_cls)

    # -- discovery ----------------------------------------------------------------------------
    def available(self) -> list[PluginInfo]:
        """Plugins the environment offers, from metadata only (nothing is imported)."""
        infos: dict[str, PluginInfo] = {}
        if self._use_entry_points:
            infos = {info.name: info for info in offered_plugins(only=self._only, third_party=self._third_party)}
        for plugin_id, cls in self._extra.items():
            infos[plugin_id] = PluginInfo(plugin_id, f"{cls.__module__}:{cls.__qualname__}", "(inline)")
        return sorted(infos.values(), key=lambda info: info.name)

    # -- loading ------------------------------------------------------------------------------
    def get(self, plugin_id: str) -> Plugin:
        """Load one plugin by id. Raises KeyError when unknown, PluginLoadError when broken."""
        if plugin_id in self._loaded:
            return self._loaded[plugin_id]
        if plugin_id in self.failures:
            raise PluginLoadError(self.failures[plugin_id])
        for info in self.available():
            if info.name == plugin_id:
                plugin = self._load(info)
                if plugin is None:
                    raise PluginLoadError(self.failures[plugin_id])
                return plugin
        known = ", ".join(info.name for info in self.available()) or "none"
        raise KeyError(f"no plugin named '{plugin_id}' (available: {known})")

    def load_all(self) -> list[Plugin]:
        """Load every available plugin; broken ones land in ``failures``."""
        plugins = []
        for info in self.available():
            if info.name in self._loaded:
                plugins.append(self._loaded[info.name])
            elif info.name not in self.failures:
                plugin = self._load(info)
                if plugin is not None:
                    plugins.append(plugin)
        return plugins

    def extensions(self) -> Extensions:
        """Load every available plugin and gather what each adds through its ``register`` hook,
        on top of LocalQwen's own data source and metric (:meth:`Extensions.builtin`).

        A plugin whose hook raises, or registers a shortcut to an action it does not have, is
        recorded in ``failures`` by name with the reason and unloaded, like one that fails to
        import; what it registered before failing is dropped, the others keep theirs."""
        extensions = Extensions.builtin()
        for plugin in self.load_all():
            trial = extensions.fork(plugin.id)
            try:
                plugin.register(trial)
                _check_shortcuts(plugin, trial)
            except Exception as exc:  # a broken plugin must never take the host down
                self._loaded.pop(plugin.id, None)
                self._fail(plugin.id, f"register() failed: {type(exc).__name__}: {exc}")
                continue
            trial.current_plugin = ""
            extensions = trial
        return extensions

    def _load(self, info: PluginInfo) -> Plugin | None:
        if info.name in self._extra:
            return self._instantiate(info.name, self._extra[info.name])
        try:
            (ep,) = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP, name=info.name)
                     if ep.value == info.target]
            target = ep.load()
        except Exception as exc:  # a broken plugin must never take the host down
            self._fail(info.name, f"import failed: {type(exc).__name__}: {exc}")
            return None
        if not (isinstance(target, type) and issubclass(target, Plugin)):
            self._fail(info.name, f"entry point {info.target} is not a localqwen Plugin subclass")
            return None
        return self._instantiate(info.name, target)

    def _instantiate(self, name: str, cls: type[Plugin]) -> Plugin | None:
        try:
            plugin = cls()
            if getattr(plugin, "id", None) != name:
                raise ValueError(f"plugin class id '{getattr(plugin, 'id', None)}' does not match entry point '{name}'")
            if not plugin.actions() and not plugin.chats:
                raise ValueError("plugin declares no actions and no chat")
        except Exception as exc:
            self._fail(name, f"registration failed: {type(exc).__name__}: {exc}")
            return None
        self.failures.pop(name, None)
        self._loaded[name] = plugin
        return plugin

    def _fail(self, name: str, reason: str) -> None:
        self.failures[name] = PluginFailure(name=name, reason=reason, traceback=traceback.format_exc())


def _check_shortcuts(plugin: Plugin, extensions: Extensions) -> None:
    """Each shortcut ``plugin`` registered exposes actions it really has (caught at load, not at use)."""
    for shortcut in extensions.shortcuts.values():
        if shortcut.plugin_id == plugin.id:
            for action_id in shortcut.actions:
                plugin.action(action_id)  # KeyError naming the plugin's actions


class PluginLoadError(RuntimeError):
    def __init__(self, failure: PluginFailure) -> None:
        self.failure = failure
        super().__init__(f"plugin '{failure.name}' could not be loaded: {failure.reason}")
