"""The workbench: paths + config + plugin host + services + extensions, built once per process.

Every frontend starts from :func:`Workbench.create`, runs actions through :meth:`Workbench.run` or
:meth:`Workbench.start_action` and chats through :attr:`Workbench.conversations`, so all of them
behave the same. This is the one place that assembles the objects; nothing below it sees it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from localqwen.config import Config, ConfigError, load_config
from localqwen.paths import AppPaths, app_paths
from localqwen.plugin_api import (
    CancelToken,
    Context,
    Form,
    PluginHost,
    PluginLoadError,
    parse_form,
    run_action,
)
from localqwen.plugin_api.extensions import Extensions
from localqwen.services import Services

if TYPE_CHECKING:
    from localqwen.conversations import Conversations
    from localqwen.jobs import Job


@dataclass
class Workbench:
    paths: AppPaths
    host: PluginHost
    services: Services
    config_error: ConfigError | None = None
    _extensions: Extensions | None = field(default=None, init=False, repr=False)
    _extensions_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @classmethod
    def create(cls, *, host: PluginHost | None = None) -> Workbench:
        paths = app_paths()
        config, error = load_config(paths.config_file)
        return cls(paths=paths, host=host or PluginHost(), services=Services(paths, config), config_error=error)

    # -- config: one owner (Services); these are conveniences for the frontends -------------------
    @property
    def config(self) -> Config:
        return self.services.config

    def set_config(self, section: str, key: str, value: Any) -> Config:
        """Write one setting to the config file and to every holder (see ``Services.set_config``)."""
        return self.services.set_config(section, key, value)

    # -- plugins ---------------------------------------------------------------------------------
    @property
    def extensions(self) -> Extensions:
        """What every available plugin registered (loads the plugins; broken ones are skipped).

        Gathered once; the lock keeps two job threads asking at the same time from gathering twice."""
        with self._extensions_lock:
            if self._extensions is None:
                self._extensions = self.host.extensions()
            return self._extensions

    def context(self, plugin_id: str, cancel: CancelToken | None = None) -> Context:
        return Context(plugin_id=plugin_id, services=self.services, cancel=cancel or CancelToken(),
                       extensions_loader=lambda: self.extensions, settings_model=self._settings_model(plugin_id))

    def _settings_model(self, plugin_id: str) -> Any:
        """The plugin's ``config_model`` (None for an unknown or broken plugin: its own error says why)."""
        try:
            return self.host.get(plugin_id).config_model
        except (KeyError, PluginLoadError):
            return None

    def run(self, plugin_id: str, action_id: str, values: Form | Mapping[str, Any],
            cancel: CancelToken | None = None) -> Iterator[Any]:
        """Validate and run one action; see :func:`localqwen.plugin_api.run_action`."""
        plugin = self.host.get(plugin_id)
        return run_action(plugin.action(action_id), values, self.context(plugin_id, cancel))

    def start_action(self, plugin_id: str, action_id: str, values: Form | Mapping[str, Any], *,
                     title: str | None = None) -> Job:
        """Validate the form (raising FormError at once) and run the action as a background job."""
        plugin = self.host.get(plugin_id)
        action = plugin.action(action_id)
        form = values if isinstance(values, Form) else parse_form(action.form, values)
        return self.services.jobs.start_stream(
            title or f"{plugin.title} › {action.title}",
            lambda cancel: run_action(action, form, self.context(plugin_id, cancel)),
            plugin_id=plugin_id, action_id=action_id)

    @cached_property
    def conversations(self) -> Conversations:
        from localqwen.conversations import Conversations

        return Conversations(self.host, self.services, self.context)
