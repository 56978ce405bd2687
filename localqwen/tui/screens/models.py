"""Models & device: the device plan, the model catalog with download, and which model each plugin uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, DataTable, Footer, Label, Markdown, Select, Static

from localqwen.i18n import t
from localqwen.runtime_info import (
    RuntimeUnavailable,
    already_downloading,
    check_model_choice,
    device_report,
    download_events,
    model_choices,
    model_entries,
    model_targets,
)
from localqwen.tui.screens.base import BaseScreen
from localqwen.tui.widgets.app_header import AppHeader
from localqwen.tui.widgets.path_picker import PathPickerScreen


class ModelsScreen(BaseScreen):
    BINDINGS = [Binding("ctrl+r", "reload", "Refresh", id="models.refresh")]

    def compose(self) -> ComposeResult:
        yield AppHeader()
        with VerticalScroll(id="models"):
            yield Label(t("models.device"), classes="section-title")
            yield Markdown("", id="device-report")
            yield Label(t("models.catalog"), classes="section-title")
            yield Static("", id="models-problem", classes="warning")
            table: DataTable[str] = DataTable(id="models-table", cursor_type="row", zebra_stripes=True)
            yield table
            with Horizontal(classes="buttons"):
                yield Button(t("models.download"), id="models-download", variant="primary")
            yield Label(t("models.per_plugin"), classes="section-title")
            yield Static(t("models.per_plugin_help"), classes="muted")
            yield VerticalScroll(id="plugin-models")
        yield Footer()

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self.query_one("#device-report", Markdown).update(t("home.loading"))
        self._probe()

    @work(thread=True, exclusive=True, group="models-probe")
    def _probe(self) -> None:
        """Probing the machine can take seconds (it may import torch): never on the UI thread."""
        services = self.app.bench.services  # type: ignore[attr-defined]
        try:
            report = device_report(services)
        except RuntimeUnavailable as exc:
            report = f"⚠ {exc}"
        try:
            entries, problem = model_entries(services), ""
        except RuntimeUnavailable as exc:
            entries, problem = [], f"⚠ {exc}"
        pickers = self._pickers()  # walks the hub caches: here, off the UI thread
        self.app.call_from_thread(self._show, report, entries, problem, pickers)

    def _pickers(self) -> list[tuple[str, str, str, list[tuple[str, str]]]]:
        """(plugin id, title, current model, choices) for each plugin's model picker."""
        bench = self.app.bench  # type: ignore[attr-defined]
        pickers = []
        for section, title in model_targets(bench.host.load_all()):
            current = str(bench.config.plugin_section(section).get("model") or "")
            pickers.append((section, title, current, model_choices(bench.services, current)))
        return pickers

    async def _show(self, report: str, entries: list[Any], problem: str,
                    pickers: list[tuple[str, str, str, list[tuple[str, str]]]]) -> None:
        await self.query_one("#device-report", Markdown).update(report)
        table = self.query_one("#models-table", DataTable)
        table.clear(columns=True)
        table.add_columns(t("models.col_model"), t("models.col_kind"), t("models.col_present"), "")
        self.query_one("#models-problem", Static).update(problem)
        for entry in entries:
            table.add_row(entry.title, entry.kind, "✓" if entry.present else "—", entry.detail, key=entry.model_id)
        await self._plugin_choices(pickers)

    async def _plugin_choices(self, pickers: list[tuple[str, str, str, list[tuple[str, str]]]]) -> None:
        """One picker per plugin: catalog models, models in the hub caches, the folder or .gguf
        already chosen; the "…" button beside it picks a folder or .gguf on disk."""
        box = self.query_one("#plugin-models", VerticalScroll)
        await box.remove_children()
        for section, title, current, options in pickers:
            row = Horizontal(classes="plugin-model-row")
            await box.mount(row)
            await row.mount(Label(title, classes="field-label"))
            await row.mount(Select(options, value=current if current else Select.NULL, allow_blank=True,
                                   prompt=t("models.default_model"), id=f"model-for-{section}"))
            await row.mount(Button("…", id=f"model-path-{section}", classes="model-path",
                                   tooltip=t("models.pick_path")))

    @on(Select.Changed)
    def _model_chosen(self, event: Select.Changed) -> None:
        select_id = event.select.id or ""
        if not select_id.startswith("model-for-"):
            return
        section = select_id.removeprefix("model-for-")
        value = "" if event.value is Select.NULL else str(event.value)
        self.save_model(section, value)

    def save_model(self, section: str, value: str) -> bool:
        """Set ``[plugins.<section>] model``; a folder or .gguf that cannot load is refused, with why."""
        bench = self.app.bench  # type: ignore[attr-defined]
        if bench.config.plugin_section(section).get("model", "") == value:
            return True
        problem = check_model_choice(bench.services, value)
        if problem:
            self.notify(problem, severity="error", timeout=10)
            return False
        try:
            bench.set_config(f"plugins.{section}", "model", value)
        except Exception as exc:
            self.notify(t("settings.save_failed", error=str(exc)), severity="error")
            return False
        self.notify(t("models.model_saved", target=section, model=value or t("models.default_model")))
        return True

    @on(Button.Pressed, ".model-path")
    def _pick_path(self, event: Button.Pressed) -> None:
        section = (event.button.id or "").removeprefix("model-path-")
        select = self.query_one(f"#model-for-{section}", Select)
        current = "" if select.value is Select.NULL else str(select.value)
        start = Path(current).expanduser() if current else Path.cwd()

        def picked(path: str | None) -> None:
            if path and self.save_model(section, path):
                options = model_choices(self.app.bench.services, path)  # type: ignore[attr-defined]
                with select.prevent(Select.Changed):  # already saved
                    select.set_options(options)
                    select.value = path

        self.app.push_screen(PathPickerScreen(start if start.is_dir() else start.parent, either=True), picked)

    @on(Button.Pressed, "#models-download")
    def _download(self) -> None:
        table = self.query_one("#models-table", DataTable)
        if table.row_count == 0:
            self.notify(t("models.nothing_selected"), severity="warning")
            return
        model_id = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        services = self.app.bench.services  # type: ignore[attr-defined]
        busy = already_downloading(services, model_id)
        if busy:
            self.notify(busy, severity="warning")
            return
        job = self.app.jobs.start_stream(  # type: ignore[attr-defined]
            t("models.downloading", model=model_id), lambda cancel: download_events(services, model_id, cancel))
        self.notify(t("models.download_started", model=model_id))
        self.app.open_job(job.id)  # type: ignore[attr-defined]
