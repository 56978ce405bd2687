"""Guided flows as a plugin capability: a sequence of a plugin's own actions shown as one wizard.

A plugin whose actions are meant to be run in order (the trainer: model -> data -> method ->
hyperparameters -> run -> evaluate) returns a :class:`GuidedFlow` from ``Plugin.guided_flow()``.
The flow names its steps (each runs one action of the plugin, with that action's form), the form
field that names the saved setup (asked once, filled into every step), and which fields are offered
as lists. When a frontend arrives at a step it asks :meth:`GuidedFlow.view` for the values to
prefill, the lists (each entry possibly unavailable on this machine, with the reason), and events
to show before the step runs (the trainer's memory estimate before Run). The TUI's wizard screen
and the web view's wizard tab render any plugin's flow from this; the CLI keeps running the steps
as separate actions, so a flow adds no frontend code to the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from localqwen.plugin_api.context import Context


@dataclass(frozen=True)
class FlowStep:
    """One step: the action it runs, its title in the step bar, and the fields offered as lists."""

    id: str
    title: str
    action: str
    lists: tuple[str, ...] = ()
    run_label: str = ""  # the run button's words for this step ("Start training"); empty: the usual "Run"


@dataclass(frozen=True)
class Choice:
    """An entry of a list. ``unavailable`` says why it cannot be picked here (it is shown greyed out)."""

    value: Any
    label: str = ""
    unavailable: str = ""

    @property
    def available(self) -> bool:
        return not self.unavailable

    @property
    def text(self) -> str:
        return self.label or str(self.value)


@dataclass
class StepView:
    """What a frontend shows on arriving at a step."""

    values: dict[str, Any] = field(default_factory=dict)  # prefill: the values this setup used last time
    choices: dict[str, list[Choice]] = field(default_factory=dict)  # field name -> its list
    intro: list[Any] = field(default_factory=list)  # events shown before the step is run (tables, warnings)
    done: list[str] = field(default_factory=list)  # ids of the steps this setup has done


ViewFunc = Callable[[str, str, Context], StepView]
DoneFunc = Callable[[str, Context], list[str]]


@dataclass(frozen=True)
class GuidedFlow:
    """A plugin's wizard. ``view(step_id, name, ctx)`` may be slow (it can probe the machine):
    frontends call it off the UI thread; ``done(name, ctx)`` must be quick."""

    title: str
    steps: tuple[FlowStep, ...]
    name_field: str
    view: ViewFunc
    done: DoneFunc
    default_name: str = "default"

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError(f"guided flow '{self.title}' has no steps")
        ids = [step.id for step in self.steps]
        if len(set(ids)) != len(ids):
            raise ValueError(f"guided flow '{self.title}': step ids repeat ({', '.join(ids)})")

    def index(self, step_id: str) -> int:
        for index, step in enumerate(self.steps):
            if step.id == step_id:
                return index
        raise KeyError(f"guided flow '{self.title}' has no step '{step_id}' (steps: "
                       f"{', '.join(s.id for s in self.steps)})")

    def first_open(self, done: list[str]) -> int:
        """Where a returning user continues: the first step not done (the last step when all are)."""
        return next((i for i, step in enumerate(self.steps) if step.id not in done), len(self.steps) - 1)
