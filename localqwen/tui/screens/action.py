"""One plugin action: its generated form on the left, the live output of the run on the right."""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Label, Static

from localqwen.i18n import t
from localqwen.jobs import Job, paced
from localqwen.plugin_api import Action, FormError, Plugin, PluginLoadError
from localqwen.tui.event_view import EventView
from localqwen.tui.form_renderer import FormView
from localqwen.tui.screens.base import BaseScreen
from localqwen.tui.widgets.app_header import AppHeader

UI_INTERVAL_S = 0.1


def follow_job(screen: Screen[Any], job: Job, view: EventView, on_finished: Any = None) -> None:
    """Stream a job's events into ``view`` from a thread worker (the UI stays responsive)."""

    @work(thread=True, exclusive=True, group="follow-job")
    def follower(self: Screen[Any]) -> None:
        from textual.worker import get_current_worker

        worker = get_current_worker()
        for batch in paced(job, UI_INTERVAL_S):  # at most ten screen updates a second
            if worker.is_cancelled:
                return
            if view.is_attached:
                self.app.call_from_thread(view.add_events, batch)
        if on_finished is not None and not worker.is_cancelled:
            self.app.call_from_thread(on_finished, job)

    follower(screen)


class ActionScreen(BaseScreen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="nav.back"),
        Binding("ctrl+r", "run", "Run", id="action.run"),
        Binding("ctrl+k", "cancel", "Cancel", id="action.cancel"),
    ]

    def __init__(self, plugin: Plugin, action: Action) -> None:
        super().__init__()
        self.plugin = plugin
        self.action_def = action
        self.job: Job | None = None

    def compose(self) -> ComposeResult:
        yield AppHeader()
        with Horizontal(id="action-layout"):
            with VerticalScroll(id="form-pane"):
                yield Label(f"{self.plugin.title} › {self.action_def.title}", classes="section-title")
                if self.action_def.description:
                    yield Static(self.action_def.description, classes="muted")
                yield FormView(self.action_def.form, id="form")
                with Horizontal(classes="buttons", id="action-buttons"):
                    yield Button(t("action.run"), id="run", variant="primary")
                    yield Button(t("action.cancel"), id="cancel", variant="error", disabled=True)
            with Vertical(id="output-pane"):
                yield Label(t("action.output"), classes="section-title")
                yield EventView(id="events")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.plugin.title} › {self.action_def.title}"
        first = self.form_view.first_input()
        if first is not None:  # typing starts in the form at once (keys are not lost)
            first.focus()
        if any(spec.options_from for spec in self.form_view.specs):
            self._load_options()

    @work(thread=True, exclusive=True, group="field-options")
    def _load_options(self) -> None:
        """Ask the plugin for its lists (existing knowledge bases...) off the UI thread."""
        bench = self.app.bench  # type: ignore[attr-defined]
        ctx = bench.context(self.plugin.id)
        for spec in self.form_view.specs:
            if not spec.options_from:
                continue
            try:
                options = self.plugin.field_options(spec.options_from, ctx)
            except Exception as exc:  # the field keeps its default; say why the list is missing
                self.app.call_from_thread(self.notify, f"{spec.label}: {type(exc).__name__}: {exc}",
                                          severity="warning")
                continue
            self.app.call_from_thread(self.form_view.set_options, spec.name, list(options))

    @property
    def form_view(self) -> FormView:
        return self.query_one(FormView)

    @property
    def event_view(self) -> EventView:
        return self.query_one(EventView)

    @on(Button.Pressed, "#run")
    async def _run_pressed(self) -> None:
        await self.action_run()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    async def action_run(self) -> None:
        if self.job is not None and not self.job.finished:
            self.notify(t("action.already_running"), severity="warning")
            return
        form = self.form_view
        form.clear_errors()
        bench = self.app.bench  # type: ignore[attr-defined]
        try:
            job = bench.start_action(self.plugin.id, self.action_def.id, form.values())  # type: ignore[attr-defined]
        except FormError as exc:
            form.show_errors(exc.errors)
            self.notify(t("form.fix_errors", count=len(exc.errors)), severity="error")
            return
        except (KeyError, PluginLoadError) as exc:
            self.notify(str(exc), severity="error")
            return
        self.job = job
        await self.event_view.clear()
        self.query_one("#cancel", Button).disabled = False
        self.query_one("#run", Button).disabled = True
        follow_job(self, job, self.event_view, self._finished)

    def action_cancel(self) -> None:
        if self.job is not None and not self.job.finished:
            self.job.cancel()
            self.notify(t("action.cancelling"))

    def _finished(self, job: Job) -> None:
        if not self.is_attached or not self.query("#cancel"):  # closed while the job ran
            return
        self.query_one("#cancel", Button).disabled = True
        self.query_one("#run", Button).disabled = False
        severity = {"ok": "information", "failed": "error", "cancelled": "warning"}.get(job.status, "information")
        self.notify(f"{job.title}: {t('status.' + job.status)}", severity=severity)  # type: ignore[arg-type]
