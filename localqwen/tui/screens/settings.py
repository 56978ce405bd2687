"""Settings: the UI language (saved to the config file and applied at once)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Footer, Label, Select, Static

from localqwen.i18n import LANGUAGES, current_language, t
from localqwen.tui.screens.base import BaseScreen
from localqwen.tui.widgets.app_header import AppHeader


class SettingsScreen(BaseScreen):
    def compose(self) -> ComposeResult:
        bench = self.app.bench  # type: ignore[attr-defined]
        setting = bench.config.app.language
        options = [(t("settings.language_auto"), "auto")] + [(name, code) for code, name in LANGUAGES.items()]
        yield AppHeader()
        with Vertical(id="settings"):
            yield Label(t("settings.title"), classes="section-title")
            yield Label(t("settings.language"), classes="field-label")
            yield Select(options, value=setting, allow_blank=False, id="language")
            yield Static(t("settings.language_help", current=LANGUAGES[current_language()]), classes="field-help")
            yield Label(t("settings.config_file"), classes="field-label")
            yield Static(str(bench.paths.config_file), classes="muted", markup=False)
            yield Label(t("settings.data_folder"), classes="field-label")
            yield Static(str(bench.paths.data_dir), classes="muted", markup=False)
        yield Footer()

    @on(Select.Changed, "#language")
    def _language(self, event: Select.Changed) -> None:
        bench = self.app.bench  # type: ignore[attr-defined]
        if event.value == bench.config.app.language or event.value is Select.NULL:
            return
        try:
            bench.set_config("app", "language", event.value)
        except Exception as exc:
            self.notify(t("settings.save_failed", error=str(exc)), severity="error")
            return
        self.app.change_language(str(event.value))  # type: ignore[attr-defined]
        self.notify(t("settings.saved"))
