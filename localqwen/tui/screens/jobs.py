"""Jobs: every long job (actions, downloads, training) with status and progress; open one to see
its output live, or its log after a restart; cancel it."""

from __future__ import annotations

import time

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Footer, Label, Static

from localqwen.i18n import t
from localqwen.jobs import Job
from localqwen.tui.event_view import EventView
from localqwen.tui.screens.action import follow_job
from localqwen.tui.screens.base import BaseScreen
from localqwen.tui.widgets.app_header import AppHeader

REFRESH_S = 0.5


def _bar(fraction: float | None, width: int = 12) -> str:
    if fraction is None:
        return "·" * width
    filled = round(fraction * width)
    return "█" * filled + "░" * (width - filled) + f" {fraction * 100:3.0f}%"


class JobsScreen(BaseScreen):
    BINDINGS = [
        Binding("enter", "open", "Open", id="jobs.open", show=False),
        Binding("ctrl+k", "cancel", "Cancel", id="jobs.cancel"),
        Binding("ctrl+d", "forget", "Forget finished", id="jobs.forget"),
    ]

    def compose(self) -> ComposeResult:
        yield AppHeader()
        with Vertical(id="jobs"):
            yield Label(t("jobs.title"), classes="section-title")
            yield Static(t("jobs.help"), classes="muted")
            table: DataTable[str] = DataTable(id="jobs-table", cursor_type="row", zebra_stripes=True)
            yield table
            with Horizontal(classes="buttons"):
                yield Button(t("jobs.open"), id="jobs-open", variant="primary")
                yield Button(t("jobs.cancel"), id="jobs-cancel", variant="error")
                yield Button(t("jobs.forget"), id="jobs-forget")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column(t("jobs.col_title"), key="title")
        table.add_column(t("jobs.col_status"), key="status")
        table.add_column(t("jobs.col_progress"), key="progress")
        table.add_column(t("jobs.col_started"), key="started")
        table.add_column(t("jobs.col_message"), key="message")
        self.refresh_jobs()
        self.set_interval(REFRESH_S, self.refresh_jobs)

    def refresh_jobs(self) -> None:
        table = self.query_one(DataTable)
        records = self.app.jobs.list()  # type: ignore[attr-defined]
        wanted = [r.id for r in records]
        if [str(k.value) for k in table.rows] != wanted:
            table.clear()
            for record in records:
                table.add_row("", "", "", "", "", key=record.id)
        for record in records:
            live = self.app.jobs.get(record.id)  # type: ignore[attr-defined]
            fraction = live.fraction if live is not None else record.progress
            status = live.status if live is not None else record.status
            message = (live.message if live is not None else record.message) or record.summary
            started = time.strftime("%m-%d %H:%M:%S", time.localtime(record.created_at))
            for column, value in (("title", record.title), ("status", t(f"status.{status}")),
                                  ("progress", _bar(fraction)), ("started", started), ("message", message)):
                table.update_cell(record.id, column, value)

    def _selected(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    @on(DataTable.RowSelected)
    @on(Button.Pressed, "#jobs-open")
    def action_open(self) -> None:
        job_id = self._selected()
        if job_id:
            self.app.push_screen(JobScreen(job_id))

    @on(Button.Pressed, "#jobs-cancel")
    def action_cancel(self) -> None:
        job_id = self._selected()
        if job_id and self.app.jobs.cancel(job_id):  # type: ignore[attr-defined]
            self.notify(t("action.cancelling"))

    @on(Button.Pressed, "#jobs-forget")
    def action_forget(self) -> None:
        removed = self.app.jobs.forget_finished()  # type: ignore[attr-defined]
        self.notify(t("jobs.forgotten", count=removed))
        self.refresh_jobs()


class JobScreen(BaseScreen):
    """One job's output: live while it runs, replayed from its log afterwards."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="nav.back"),
        Binding("ctrl+k", "cancel", "Cancel", id="jobs.cancel"),
    ]

    def __init__(self, job_id: str) -> None:
        super().__init__()
        self.job_id = job_id

    def compose(self) -> ComposeResult:
        record = self.app.jobs.record(self.job_id)  # type: ignore[attr-defined]
        yield AppHeader()
        with Vertical(id="job-detail"):
            yield Label(record.title if record else self.job_id, classes="section-title")
            with Horizontal(classes="buttons"):
                yield Button(t("jobs.cancel"), id="job-cancel", variant="error")
            yield EventView(id="events")
        yield Footer()

    async def on_mount(self) -> None:
        jobs = self.app.jobs  # type: ignore[attr-defined]
        view = self.query_one(EventView)
        live: Job | None = jobs.get(self.job_id)
        if live is not None:
            follow_job(self, live, view)
        else:
            await view.add_events(jobs.events(self.job_id))
            self.query_one("#job-cancel", Button).disabled = True

    @on(Button.Pressed, "#job-cancel")
    def action_cancel(self) -> None:
        if self.app.jobs.cancel(self.job_id):  # type: ignore[attr-defined]
            self.notify(t("action.cancelling"))
