"""The workbench: paths + config + plugin host + services, built once per process.

Every frontend starts from :func:`Workbench.create` and runs actions through
:meth:`Workbench.run`, so all three behave the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from localqwen.config import Config, ConfigError, load_config
from localqwen.paths import AppPaths, app_paths
from localqwen.plugin_api import CancelToken, Context, Form, PluginHost, run_action
from localqwen.services import Services


@dataclass
class Workbench:
    paths: AppPaths
    config: Config
    host: PluginHost
    services: Services
    config_error: ConfigError | None = None
    _contexts: dict[str, Context] = field(default_factory=dict)

    @classmethod
    def create(cls, *, host: PluginHost | None = None) -> Workbench:
        paths = app_paths()
        config, error = load_config(paths.config_file)
        return cls(paths=paths, config=config, host=host or PluginHost(),
                   services=Services(paths, config), config_error=error)

    def context(self, plugin_id: str, cancel: CancelToken | None = None) -> Context:
        return Context(plugin_id=plugin_id, paths=self.paths, config=self.config,
                       services=self.services, cancel=cancel or CancelToken())

    def run(self, plugin_id: str, action_id: str, values: Form | Mapping[str, Any],
            cancel: CancelToken | None = None) -> Iterator[Any]:
        """Validate and run one action; see :func:`localqwen.plugin_api.run_action`."""
        plugin = self.host.get(plugin_id)
        return run_action(plugin.action(action_id), values, self.context(plugin_id, cancel))
