"""What plugins add beyond actions and chat, gathered through one hook: ``Plugin.register``.

The host calls each loaded plugin's ``register(extensions)`` once; the app holds the one
:class:`Extensions` object (``Workbench.extensions``) and hands its registries to whoever needs
them: ``localqwen train`` and the trainer wizard get the data sources and metrics, the tool loop
gets the tools, the CLI gets the shortcuts. It starts with LocalQwen's own data source and metric,
so that mapping is the whole choice. Nothing here is a module-level global, so two workbenches in
one process (tests) never see each other's additions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localqwen.runtime.tool_loop import Tool
    from localqwen.training.after import Metric
    from localqwen.training.data_sources import DataSource

SHORTCUT_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class CliShortcut:
    """``localqwen NAME SUB ...`` as a short form of ``localqwen run PLUGIN ACTION ...``.

    Each action becomes a sub-command named after the action id without a ``NAME-`` prefix
    (the captioner's ``coco-download`` under ``coco`` is ``localqwen coco download``)."""

    name: str
    plugin_id: str
    help: str
    actions: tuple[str, ...]  # the plugin's action ids the shortcut exposes

    def subcommands(self) -> dict[str, str]:
        """Sub-command name -> action id."""
        prefix = self.name + "-"
        return {action.removeprefix(prefix) or action: action for action in self.actions}


@dataclass
class Extensions:
    data_sources: dict[str, DataSource] = field(default_factory=dict)
    metrics: dict[str, Metric] = field(default_factory=dict)
    tools: dict[str, Tool] = field(default_factory=dict)  # for the runtime's tool loop (run_tool_loop)
    shortcuts: dict[str, CliShortcut] = field(default_factory=dict)
    # Which plugin is registering right now (set by the host), so entries can say where they came from.
    current_plugin: str = ""
    # kind ("data_sources", "metrics", "tools", "shortcuts") -> name -> the plugin that added it ("" = LocalQwen).
    owners: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def builtin(cls) -> Extensions:
        """LocalQwen's own additions: the ``synthetic-shapes`` data source and the ``exact_match`` metric."""
        from localqwen.training.after import builtin_metrics
        from localqwen.training.data_sources import builtin_data_sources

        return cls(data_sources=builtin_data_sources(), metrics=builtin_metrics())

    def fork(self, plugin_id: str) -> Extensions:
        """A copy that ``plugin_id`` registers into; the host keeps it only if ``register`` succeeds."""
        return Extensions(dict(self.data_sources), dict(self.metrics), dict(self.tools), dict(self.shortcuts),
                          current_plugin=plugin_id, owners={kind: dict(names) for kind, names in self.owners.items()})

    def added_by(self, plugin_id: str) -> dict[str, list[str]]:
        """What one plugin registered, by kind (only the kinds it used); ``localqwen plugins`` shows it."""
        found: dict[str, list[str]] = {}
        for kind, names in self.owners.items():
            mine = sorted(name for name, owner in names.items() if owner == plugin_id)
            if mine:
                found[kind] = mine
        return found

    # -- what a plugin's register() calls -----------------------------------------------------
    def add_data_source(self, name: str, title: str, builder: Callable[..., Any]) -> None:
        """A trainer data generator: ``builder(out_dir, **options) -> path of the train file``;
        a job config names it as ``[data.source] name = ...`` and the wizard's data step lists it."""
        from localqwen.training.data_sources import DataSource

        self._check(name, builder, "data source", "builder(out_dir, **options) -> Path")
        self._unique("data_sources", name, "data source")
        self.data_sources[name] = DataSource(name, title or name, builder, self.current_plugin)

    def add_metric(self, name: str, metric: Metric) -> None:
        """A task metric ``metric(predictions, references) -> {name: value}`` for the wizard's evaluate step."""
        self._check(name, metric, "metric", "metric(predictions, references) -> dict")
        self._unique("metrics", name, "metric")
        self.metrics[name] = metric

    def add_tool(self, tool: Tool) -> None:
        """A :class:`localqwen.runtime.tool_loop.Tool` a chat may offer the model through the tool loop."""
        from localqwen.runtime.tool_loop import Tool

        if not isinstance(tool, Tool):
            raise TypeError(f"add_tool takes a localqwen.runtime.tool_loop.Tool, not {type(tool).__name__}")
        self._unique("tools", tool.name, "tool")
        self.tools[tool.name] = tool

    def add_shortcut(self, name: str, help: str, actions: tuple[str, ...] | list[str]) -> None:
        """``localqwen NAME SUB ...`` for some of this plugin's actions (see :class:`CliShortcut`)."""
        if not SHORTCUT_NAME.match(name):
            raise ValueError(f"CLI shortcut name '{name}' must be lower-case letters, digits and dashes")
        if not actions:
            raise ValueError(f"CLI shortcut '{name}' names no actions")
        self._unique("shortcuts", name, "CLI shortcut")
        self.shortcuts[name] = CliShortcut(name, self.current_plugin, help, tuple(actions))

    # -- helpers --------------------------------------------------------------------------------
    def _check(self, name: str, func: Any, kind: str, shape: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {kind} needs a non-empty name")
        if not callable(func):
            raise ValueError(f"{kind} '{name}' must be a callable {shape}")

    def _unique(self, registry: str, name: str, kind: str) -> None:
        """Refuse a second entry of one name (silently replacing another plugin's would be worse),
        then note who adds this one."""
        owners = self.owners.setdefault(registry, {})
        if name in getattr(self, registry):
            owner = owners.get(name, "")
            raise ValueError(f"{kind} '{name}' is already registered by "
                             + (f"plugin '{owner}'" if owner else "LocalQwen itself"))
        owners[name] = self.current_plugin
