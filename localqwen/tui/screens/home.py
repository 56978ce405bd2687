"""Home: every registered plugin with its actions, and any plugin that failed to load (and why)."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Header, Label, Static

from localqwen.frontend_hooks import view_hook
from localqwen.i18n import t
from localqwen.plugin_api import Plugin
from localqwen.tui.screens.base import BaseScreen


class HomeScreen(BaseScreen):
    """Paints at once from entry-point metadata, then imports the plugins in a worker thread
    (importing them can take seconds) and fills in their actions."""

    def __init__(self) -> None:
        super().__init__()
        self.plugins: list[Plugin] | None = None

    def compose(self) -> ComposeResult:
        host = self.app.bench.host  # type: ignore[attr-defined]
        yield Header()
        with VerticalScroll(id="home"):
            yield Static(t("home.intro"), id="home-intro")
            if self.plugins is None:
                available = host.available()
                yield Label(t("home.plugins", count=len(available)), classes="section-title")
                for info in available:
                    with Vertical(classes="plugin-card loading"):
                        yield Label(Text(info.name, style="bold"), classes="plugin-title")
                        yield Static(t("home.loading"), classes="muted")
            else:
                yield from self._plugin_cards(self.plugins)
                yield from self._failures()
        yield Footer()

    def on_mount(self) -> None:
        if self.plugins is None:
            self._load_plugins()

    @work(thread=True, exclusive=True, group="load-plugins")
    def _load_plugins(self) -> None:
        plugins = self.app.bench.host.load_all()  # type: ignore[attr-defined]
        self.app.call_from_thread(self._show_plugins, plugins)

    def _show_plugins(self, plugins: list[Plugin]) -> None:
        self.plugins = plugins
        self.refresh(recompose=True)

    def _plugin_cards(self, plugins: list[Plugin]) -> ComposeResult:
        yield Label(t("home.plugins", count=len(plugins)), classes="section-title")
        if not plugins:
            yield Static(t("home.no_plugins"), classes="muted")
        for plugin in plugins:
            with Vertical(classes="plugin-card", id=f"plugin-{plugin.id}"):
                yield Label(Text(plugin.title, style="bold"), classes="plugin-title")
                if plugin.description:
                    yield Static(plugin.description, classes="plugin-description")
                with Horizontal(classes="plugin-actions"):
                    if plugin.chats:
                        yield Button(t("chat.open"), id=f"chat-{plugin.id}", classes="chat-button", variant="success")
                    for item in plugin.actions():
                        yield Button(item.title, id=f"action-{plugin.id}-{item.id}", classes="action-button",
                                     tooltip=item.description or None)
                    hook, problem = view_hook(plugin, "tui")
                    if hook is not None:
                        yield Button(t("home.custom_view"), id=f"view-{plugin.id}", classes="view-button",
                                     variant="primary")
                if problem:
                    yield Static(t("home.custom_view_failed", error=problem), classes="warning")

    def _failures(self) -> ComposeResult:
        failures = self.app.bench.host.failures  # type: ignore[attr-defined]
        if failures:
            yield Label(t("home.failed", count=len(failures)), classes="section-title failed-title")
            for failure in sorted(failures.values(), key=lambda f: f.name):
                yield Static(Text.assemble(("✗ ", "red"), (failure.name, "bold"), f": {failure.reason}"),
                             classes="plugin-failure", id=f"failure-{failure.name}")

    @on(Button.Pressed, ".action-button")
    def _open_action(self, event: Button.Pressed) -> None:
        host = self.app.bench.host  # type: ignore[attr-defined]
        for plugin in host.load_all():
            for item in plugin.actions():
                if event.button.id == f"action-{plugin.id}-{item.id}":
                    self.app.open_action(plugin, item.id)  # type: ignore[attr-defined]
                    return

    @on(Button.Pressed, ".chat-button")
    def _open_chat(self, event: Button.Pressed) -> None:
        self.app.open_chat((event.button.id or "").removeprefix("chat-"))  # type: ignore[attr-defined]

    @on(Button.Pressed, ".view-button")
    def _open_view(self, event: Button.Pressed) -> None:
        plugin_id = (event.button.id or "").removeprefix("view-")
        self.app.open_custom_view(self.app.bench.host.get(plugin_id))  # type: ignore[attr-defined]
