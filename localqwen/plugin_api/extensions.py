"""What plugins add beyond actions and chat, gathered through one hook: ``Plugin.register``.

The host calls each loaded plugin's ``register(extensions)`` once; the app holds the one
:class:`Extensions` object and hands its registries to whoever needs them (the trainer gets the
data sources and metrics, the tool loop gets the tools, the CLI gets the shortcuts). Nothing here is
a module-level global, so two workbenches in one process (tests) never see each other's additions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DataSource:
    """A trainer data generator: ``builder(out_dir, **options) -> path of the train file``."""

    name: str
    title: str
    builder: Callable[..., Any]
    plugin_id: str = ""


@dataclass(frozen=True)
class CliShortcut:
    """``localqwen NAME ACTION ...`` as a short form of ``localqwen run PLUGIN ACTION ...``."""

    name: str
    plugin_id: str
    help: str
    actions: tuple[str, ...]  # the plugin's action ids the shortcut exposes


@dataclass
class Extensions:
    data_sources: dict[str, DataSource] = field(default_factory=dict)
    metrics: dict[str, Callable[[list[str], list[str]], dict[str, float]]] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)  # name -> localqwen.runtime.tool_loop.Tool
    shortcuts: dict[str, CliShortcut] = field(default_factory=dict)
    # Which plugin is registering right now (set by the host), so entries can say where they came from.
    current_plugin: str = ""

    def add_data_source(self, name: str, title: str, builder: Callable[..., Any]) -> None:
        self._unique(self.data_sources, name, "data source")
        self.data_sources[name] = DataSource(name, title, builder, self.current_plugin)

    def add_metric(self, name: str, metric: Callable[[list[str], list[str]], dict[str, float]]) -> None:
        self._unique(self.metrics, name, "metric")
        self.metrics[name] = metric

    def add_tool(self, tool: Any) -> None:
        self._unique(self.tools, tool.name, "tool")
        self.tools[tool.name] = tool

    def add_shortcut(self, name: str, help: str, actions: tuple[str, ...]) -> None:
        self._unique(self.shortcuts, name, "CLI shortcut")
        self.shortcuts[name] = CliShortcut(name, self.current_plugin, help, tuple(actions))

    def _unique(self, registry: dict[str, Any], name: str, kind: str) -> None:
        if name in registry:
            raise ValueError(f"{kind} '{name}' is already registered")
