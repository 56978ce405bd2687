"""Any plugin's guided flow (plugin_api/guide.py) as one screen: step k of n, Next/Back, the
setup's name asked once, the step's form prefilled with the values it last ran with, lists to pick
from (entries this machine cannot use are greyed out with the reason), what to know before running
(the trainer's memory estimate before Run), and the step's live output (the loss chart while
training, the base-vs-tuned table at the end)."""

from __future__ import annotations

import contextlib
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from localqwen.guided_flow import FlowWalk
from localqwen.i18n import t
from localqwen.jobs import Job
from localqwen.plugin_api import Choice, FormError, Plugin, PluginLoadError, StepView
from localqwen.tui.event_view import EventView
from localqwen.tui.form_renderer import FormView
from localqwen.tui.screens.action import follow_job
from localqwen.tui.screens.base import BaseScreen
from localqwen.tui.widgets.app_header import AppHeader


class ChoiceList(OptionList):
    """A field's list: picking an entry fills the field; unavailable entries are greyed out with
    the reason and cannot be picked."""

    DEFAULT_CSS = "ChoiceList { height: auto; max-height: 10; margin: 0 0 1 0; }"

    def __init__(self, field_name: str, choices: list[Choice]) -> None:
        options = []
        for index, choice in enumerate(choices):
            prompt = Text(choice.text)
            if choice.unavailable:
                prompt.append(f"  ({t('wizard.unavailable', reason=choice.unavailable)})", style="dim italic")
            options.append(Option(prompt, id=f"choice-{index}", disabled=not choice.available))
        super().__init__(*options, id=f"choices-{field_name}", classes="choice-list")
        self.field_name = field_name
        self.choices = choices

    def highlight_value(self, value: Any) -> None:
        for index, choice in enumerate(self.choices):
            if choice.available and str(choice.value) == str(value):
                self.highlighted = index
                return


class WizardScreen(BaseScreen):
    DEFAULT_CSS = """
    WizardScreen #wizard-layout { height: 1fr; }
    WizardScreen #wizard-name-row { height: auto; }
    WizardScreen #wizard-name-row Label { padding: 1 1 0 0; }
    WizardScreen #wizard-name { width: 40; }
    WizardScreen #step-bar { height: auto; padding: 0 1; }
    WizardScreen #wizard-body { height: 1fr; }
    WizardScreen #form-pane { width: 2fr; }
    WizardScreen #output-pane { width: 3fr; }
    WizardScreen #wizard-buttons { height: auto; dock: bottom; }
    WizardScreen #intro { height: auto; max-height: 20; }
    """
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="nav.back"),
        Binding("ctrl+r", "run", "Run", id="action.run"),
        Binding("ctrl+k", "cancel", "Cancel", id="action.cancel"),
        Binding("ctrl+n", "next_step", "Next", show=False),
        Binding("ctrl+b", "previous_step", "Back", show=False),
    ]

    def __init__(self, plugin: Plugin, walk: FlowWalk) -> None:
        super().__init__()
        self.plugin = plugin
        self.walk = walk
        self.job: Job | None = None
        self.view: StepView | None = None
        self.done: list[str] = walk.done()
        # Which load of the step's view is the current one: a rebuild (another step or setup) or
        # leaving the screen makes a view still being shown stale, and it stops where it is.
        self._view_serial = 0

    def compose(self) -> ComposeResult:
        walk = self.walk
        step = walk.step
        yield AppHeader()
        with Vertical(id="wizard-layout"):
            yield Label(t("wizard.title", plugin=self.plugin.title, flow=walk.flow.title), classes="section-title")
            with Horizontal(id="wizard-name-row"):
                yield Label(t("wizard.name"), classes="field-label")
                yield Input(walk.name, id="wizard-name", tooltip=t("wizard.name_help"))
            yield Static(walk.step_bar(self.done), id="step-bar")
            yield Label(t("wizard.step", index=walk.index + 1, count=walk.count, title=step.title),
                        id="step-title", classes="section-title")
            with Horizontal(id="wizard-body"):
                with VerticalScroll(id="form-pane"):
                    if walk.action.description:
                        yield Static(walk.action.description, classes="muted")
                    yield Static(t("wizard.loading"), id="step-loading", classes="muted")
                    yield FormView(walk.action.form, id="form")
                    yield Label(t("wizard.intro"), id="intro-title", classes="section-title")
                    yield EventView(id="intro", show_done=False)
                with Vertical(id="output-pane"):
                    yield Label(t("action.output"), classes="section-title")
                    yield EventView(id="events")
            # Below both panes, so Back / Run / Next never scroll away under a long list.
            with Horizontal(classes="buttons", id="wizard-buttons"):
                yield Button(t("wizard.back"), id="back", disabled=walk.first)
                yield Button(step.run_label or t("wizard.run"), id="run", variant="primary")
                yield Button(t("action.cancel"), id="cancel", variant="error", disabled=True)
                yield Button(t("wizard.next"), id="next", disabled=walk.last)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.plugin.title} › {self.walk.flow.title}"
        name_row = self.query(f"#row-{self.walk.flow.name_field}")
        if name_row:
            name_row.first().display = False  # asked once, above every step
        self.query_one("#intro-title").display = False
        self._view_serial += 1
        self._load_view(self._view_serial)

    @property
    def form_view(self) -> FormView:
        return self.query_one("#form", FormView)

    @property
    def event_view(self) -> EventView:
        return self.query_one("#events", EventView)

    # -- the step's view (prefill, lists, intro) ------------------------------------------------
    @work(thread=True, exclusive=True, group="wizard-view")
    def _load_view(self, serial: int) -> None:
        try:
            view = self.walk.view()
        except Exception as exc:  # the form still works without prefill or lists
            self.app.call_from_thread(self.notify, f"{type(exc).__name__}: {exc}", severity="error")
            view = StepView(done=self.done)
        # Every step change rebuilds the screen with a new serial, so _show_view drops a stale view.
        self.app.call_from_thread(self._show_view, view, serial)  # type: ignore[arg-type]

    def _showing(self, serial: int, form: FormView) -> bool:
        """Whether the view of load ``serial`` may still go into ``form`` (checked after each await:
        escape pressed, or the step rebuilt, while it was being shown removed what it fills in)."""
        return self.is_attached and form.is_attached and serial == self._view_serial

    async def _show_view(self, view: StepView, serial: int) -> None:
        form = self.form_view if self.is_attached else None
        if form is None or not self._showing(serial, form):
            return
        self.view = view
        self.done = view.done
        self.query_one("#step-bar", Static).update(self.walk.step_bar(self.done))
        self.query_one("#step-loading").display = False
        names = {spec.name for spec in form.specs}
        for name, value in view.values.items():
            if name in names and name != self.walk.flow.name_field and value is not None:
                # A saved value the widget no longer takes (a choice gone since) leaves the default.
                with contextlib.suppress(Exception):
                    form.set_value(name, value)
        first_list: ChoiceList | None = None
        for name, choices in view.choices.items():
            if name not in names or not choices:
                continue
            row = self.query_one(f"#row-{name}")
            widget = form.input_for(name)
            listing = ChoiceList(name, choices)
            await row.mount(listing, before=widget)
            if not self._showing(serial, form):
                return
            if isinstance(widget, Select):
                widget.display = False  # the list replaces the drop-down (it can show why an entry is greyed)
            current = view.values.get(name)
            if current is not None:
                listing.highlight_value(current)
            first_list = first_list or listing
        if view.intro:
            self.query_one("#intro-title").display = True
            await self.query_one("#intro", EventView).add_events(list(view.intro))
            if not self._showing(serial, form):
                return
        # Typing starts in the step's first list or field, not nowhere.
        target = first_list or next((form.input_for(s.name) for s in form.specs
                                     if s.name != self.walk.flow.name_field and not s.advanced), None)
        if target is not None:
            target.focus()

    @on(OptionList.OptionSelected, ".choice-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        listing = event.option_list
        assert isinstance(listing, ChoiceList)
        choice = listing.choices[event.option_index]
        if choice.available:
            self.form_view.set_value(listing.field_name, choice.value)

    # -- moving ---------------------------------------------------------------------------------
    @on(Button.Pressed, "#next")
    async def action_next_step(self) -> None:
        await self._move(self.walk.index + 1)

    @on(Button.Pressed, "#back")
    async def action_previous_step(self) -> None:
        await self._move(self.walk.index - 1)

    async def _move(self, index: int) -> None:
        if self.job is not None and not self.job.finished:
            self.notify(t("wizard.busy"), severity="warning")
            return
        if not 0 <= index < self.walk.count:
            return
        self._take_name(jump=False)
        self.walk.go(index)
        await self._rebuild()

    async def _rebuild(self) -> None:
        self.view, self.job = None, None
        await self.recompose()
        self.on_mount()

    @on(Input.Submitted, "#wizard-name")
    async def _name_entered(self) -> None:
        if self.job is not None and not self.job.finished:
            self.notify(t("wizard.busy"), severity="warning")
            return
        if self._take_name(jump=True):
            await self._rebuild()

    def _take_name(self, *, jump: bool) -> bool:
        """Adopt the name typed above the steps; True when it changed. ``jump``: open that setup at
        its first open step (pressing Enter); otherwise stay on this step (running it)."""
        typed = self.query_one("#wizard-name", Input).value.strip()
        if not typed or typed == self.walk.name:
            return False
        index = self.walk.index
        self.walk.rename(typed)
        if not jump:
            self.walk.go(index)
        self.done = self.walk.done()
        return True

    # -- running --------------------------------------------------------------------------------
    @on(Button.Pressed, "#run")
    async def action_run(self) -> None:
        if self.job is not None and not self.job.finished:
            self.notify(t("action.already_running"), severity="warning")
            return
        self._take_name(jump=False)
        form = self.form_view
        form.clear_errors()
        try:
            job = self.walk.start(form.values())
        except FormError as exc:
            form.show_errors(exc.errors)
            self.notify(t("form.fix_errors", count=len(exc.errors)), severity="error")
            return
        except (KeyError, ValueError, PluginLoadError) as exc:
            self.notify(str(exc), severity="error")
            return
        self.job = job
        await self.event_view.clear()
        self._show_running(True)
        follow_job(self, job, self.event_view, self._finished)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        if self.job is not None and not self.job.finished:
            self.job.cancel()
            self.notify(t("action.cancelling"))

    def _show_running(self, running: bool) -> None:
        self.query_one("#cancel", Button).disabled = not running
        self.query_one("#run", Button).disabled = running
        self.query_one("#back", Button).disabled = running or self.walk.first
        self.query_one("#next", Button).disabled = running or self.walk.last

    def _finished(self, job: Job) -> None:
        if not self.is_attached or not self.query("#cancel"):  # left the step while it ran
            return
        self._show_running(False)
        self.done = self.walk.done()
        self.query_one("#step-bar", Static).update(self.walk.step_bar(self.done))
        severity = {"ok": "information", "failed": "error", "cancelled": "warning"}.get(job.status, "information")
        message = f"{job.title}: {t('status.' + job.status)}"
        if job.status == "ok" and not self.walk.last:
            message += f". {t('wizard.done_next')}"
            self.query_one("#next", Button).focus()
        self.notify(message, severity=severity)  # type: ignore[arg-type]


def open_wizard(app: Any, plugin: Plugin) -> WizardScreen:
    """The wizard screen for ``plugin`` (its flow must exist: see ``Plugin.guided_flow``)."""
    return WizardScreen(plugin, FlowWalk(app.bench, plugin.id))
