"""Home: every registered plugin with its actions, and any plugin that failed to load (and why)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Header, Label, Static

from localqwen.frontend_hooks import view_hook
from localqwen.i18n import t
from localqwen.tui.screens.base import BaseScreen


class HomeScreen(BaseScreen):
    def compose(self) -> ComposeResult:
        app = self.app
        host = app.bench.host  # type: ignore[attr-defined]
        plugins = host.load_all()
        yield Header()
        with VerticalScroll(id="home"):
            yield Static(t("home.intro"), id="home-intro")
            yield Label(t("home.plugins", count=len(plugins)), classes="section-title")
            if not plugins:
                yield Static(t("home.no_plugins"), classes="muted")
            for plugin in plugins:
                with Vertical(classes="plugin-card", id=f"plugin-{plugin.id}"):
                    yield Label(Text(plugin.title, style="bold"), classes="plugin-title")
                    if plugin.description:
                        yield Static(plugin.description, classes="plugin-description")
                    with Horizontal(classes="plugin-actions"):
                        for item in plugin.actions():
                            yield Button(item.title, id=f"action-{plugin.id}-{item.id}", classes="action-button",
                                         tooltip=item.description or None)
                        hook, problem = view_hook(plugin, "tui")
                        if hook is not None:
                            yield Button(t("home.custom_view"), id=f"view-{plugin.id}", classes="view-button",
                                         variant="primary")
                    if problem:
                        yield Static(t("home.custom_view_failed", error=problem), classes="warning")
            if host.failures:
                yield Label(t("home.failed", count=len(host.failures)), classes="section-title failed-title")
                for failure in sorted(host.failures.values(), key=lambda f: f.name):
                    yield Static(Text.assemble(("✗ ", "red"), (failure.name, "bold"), f": {failure.reason}"),
                                 classes="plugin-failure", id=f"failure-{failure.name}")
        yield Footer()

    @on(Button.Pressed, ".action-button")
    def _open_action(self, event: Button.Pressed) -> None:
        host = self.app.bench.host  # type: ignore[attr-defined]
        for plugin in host.load_all():
            for item in plugin.actions():
                if event.button.id == f"action-{plugin.id}-{item.id}":
                    self.app.open_action(plugin, item.id)  # type: ignore[attr-defined]
                    return

    @on(Button.Pressed, ".view-button")
    def _open_view(self, event: Button.Pressed) -> None:
        plugin_id = (event.button.id or "").removeprefix("view-")
        self.app.open_custom_view(self.app.bench.host.get(plugin_id))  # type: ignore[attr-defined]
