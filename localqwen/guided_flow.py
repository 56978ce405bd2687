"""One walk through a plugin's guided flow (plugin_api/guide.py), shared by the TUI and web wizards.

:class:`FlowWalk` knows where the user is (step k of n), the setup's name (asked once and written
into every step's form, so it cannot silently fall back to "default" between steps), and starts a
step's action as a job. The frontends only draw it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from localqwen.plugin_api import FieldSpec, FlowStep, GuidedFlow, StepView, form_fields

if TYPE_CHECKING:
    from localqwen.app import Workbench
    from localqwen.jobs import Job
    from localqwen.plugin_api import Action, Plugin


def flow_plugins(bench: Workbench) -> list[Plugin]:
    """The loaded plugins that offer a guided flow."""
    return [plugin for plugin in bench.host.load_all() if plugin.guided_flow() is not None]


class FlowWalk:
    def __init__(self, bench: Workbench, plugin_id: str, name: str | None = None) -> None:
        plugin = bench.host.get(plugin_id)
        flow = plugin.guided_flow()
        if flow is None:
            raise ValueError(f"plugin '{plugin_id}' offers no guided flow")
        self.bench = bench
        self.plugin = plugin
        self.flow: GuidedFlow = flow
        self.name = self._checked(name or flow.default_name)
        self.index = flow.first_open(self.done())  # a returning user continues where they stopped

    # -- where we are --------------------------------------------------------------------------
    @property
    def step(self) -> FlowStep:
        return self.flow.steps[self.index]

    @property
    def action(self) -> Action:
        return self.plugin.action(self.step.action)

    @property
    def count(self) -> int:
        return len(self.flow.steps)

    @property
    def first(self) -> bool:
        return self.index == 0

    @property
    def last(self) -> bool:
        return self.index == self.count - 1

    def fields(self) -> list[FieldSpec]:
        """The current step's form fields, without the name field (the walk fills that in)."""
        return [spec for spec in form_fields(self.action.form) if spec.name != self.flow.name_field]

    # -- moving --------------------------------------------------------------------------------
    def go(self, index: int) -> FlowStep:
        if not 0 <= index < self.count:
            raise IndexError(f"no step {index + 1}: the flow has {self.count} steps")
        self.index = index
        return self.step

    def next(self) -> FlowStep:
        return self.go(min(self.index + 1, self.count - 1))

    def back(self) -> FlowStep:
        return self.go(max(self.index - 1, 0))

    def rename(self, name: str) -> None:
        """Switch to another saved setup (or a new one); the walk goes to its first open step."""
        self.name = self._checked(name)
        self.index = self.flow.first_open(self.done())

    @staticmethod
    def _checked(name: str) -> str:
        name = (name or "").strip()
        if not name:
            raise ValueError("give the setup a name (letters, digits, - and _)")
        return name

    # -- what the plugin says ------------------------------------------------------------------
    def done(self) -> list[str]:
        return self.flow.done(self.name, self.bench.context(self.plugin.id))

    def view(self) -> StepView:
        """The current step's prefill, lists and intro events. May be slow: call it off the UI thread."""
        return self.flow.view(self.step.id, self.name, self.bench.context(self.plugin.id))

    def marks(self, done: list[str]) -> list[tuple[FlowStep, bool, bool]]:
        """Each step with (is it the current step, is it done), for a step bar."""
        return [(step, i == self.index, step.id in done) for i, step in enumerate(self.flow.steps)]

    def step_bar(self, done: list[str]) -> str:
        """The steps in one line of plain text: ``✓ 1. Base model  ▶ 2. Data  · 3. Method ...``
        (the current step has ▶, followed by ✓ when it is done already)."""
        parts = []
        for i, (step, current, finished) in enumerate(self.marks(done)):
            mark = ("▶" if current else "") + ("✓" if finished else ("" if current else "·"))
            parts.append(f"{mark} {i + 1}. {step.title}")
        return "  ".join(parts)

    # -- running -------------------------------------------------------------------------------
    def values(self, raw: dict[str, Any]) -> dict[str, Any]:
        return {**raw, self.flow.name_field: self.name}

    def start(self, raw: dict[str, Any]) -> Job:
        """Validate the step's form (FormError at once) and run its action as a job."""
        title = f"{self.flow.title} '{self.name}' › {self.step.title}"
        return self.bench.start_action(self.plugin.id, self.step.action, self.values(raw), title=title)
