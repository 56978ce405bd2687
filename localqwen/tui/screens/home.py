"""Home: every registered plugin with its actions, and any plugin that failed to load (and why).

It is the first screen, so it paints before anything heavy is imported: from entry-point metadata
(names only), then a worker builds the workbench and loads the plugins, then probes the machine
(torch) and marks each plugin whose needs this machine does not meet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import HorizontalScroll, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Label, Static

from localqwen.i18n import t
from localqwen.tui.screens.base import BaseScreen
from localqwen.tui.widgets.app_header import AppHeader
from localqwen.vocabulary.plugin_index import PluginInfo, offered_plugins, only_from_env, third_party_from_env

if TYPE_CHECKING:
    from localqwen.plugin_api import Plugin
    from localqwen.plugin_fit import PluginFit


class HomeBody(VerticalScroll):
    """The home screen's scrolling body, rebuilt on its own when the plugins arrive: the header
    stays (Textual's header fails when it is replaced just after being mounted)."""

    def __init__(self, build: Callable[[], ComposeResult], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._build = build

    def compose(self) -> ComposeResult:
        yield from self._build()


class HomeScreen(BaseScreen):
    """Paints at once from entry-point metadata; after that first frame a worker thread builds
    the workbench, imports the plugins (seconds) and fills in their actions, then checks each
    plugin's needs against this machine."""

    def __init__(self) -> None:
        super().__init__()
        self.plugins: list[Plugin] | None = None
        self.fits: dict[str, PluginFit] | None = None  # None until the machine has been checked

    def compose(self) -> ComposeResult:
        yield AppHeader()
        yield HomeBody(self._body, id="home")
        yield Footer()

    def _body(self) -> ComposeResult:
        yield Static(t("home.intro"), id="home-intro")
        if self.plugins is None:
            offered = self._offered()
            yield Label(t("home.plugins", count=len(offered)), classes="section-title")
            # One widget for the whole list: each widget more in the first frame costs time.
            names = Text("\n").join(Text(info.name, style="bold") for info in offered)
            yield Static(Text.assemble(names, "\n", (t("home.loading"), "dim")), id="home-offered")
        else:
            yield from self._plugin_cards(self.plugins)
            yield from self._failures()

    def _offered(self) -> list[PluginInfo]:
        """The plugins to list before they load: the host's list once the workbench exists,
        else the same list read from metadata without importing the plugin API."""
        bench = getattr(self.app, "_bench", None)
        if bench is not None:
            return bench.host.available()
        return offered_plugins(only=only_from_env(), third_party=third_party_from_env())

    def on_mount(self) -> None:
        if self.plugins is None:
            # After the first frame: the worker's imports would otherwise hold it back.
            self.call_after_refresh(self._load_plugins)

    @work(thread=True, exclusive=True, group="load-plugins")
    def _load_plugins(self) -> None:
        from localqwen.plugin_fit import plugin_fits

        bench = self.app.bench  # type: ignore[attr-defined]
        plugins = bench.host.load_all()
        self.app.call_from_thread(self._show_plugins, plugins)
        self.app.call_from_thread(self._show_fits, plugin_fits(plugins, bench.services.device))

    async def _show_plugins(self, plugins: list[Plugin]) -> None:
        """Rebuild the body with the plugins' cards; done (cards mounted) before the worker goes on."""
        self.plugins = plugins
        await self.query_one(HomeBody).recompose()

    def _show_fits(self, fits: dict[str, PluginFit]) -> None:
        """Add each plugin's fit to its card in place (a recompose would lose the focus)."""
        self.fits = fits
        for plugin_id in fits:
            notes = list(self._fit_notes(plugin_id))
            cards = self.query(f"#plugin-{plugin_id}")
            if notes and cards:
                card = cards.first()
                card.mount_all(notes, before=card.query_one(".plugin-actions"))

    def _fit_notes(self, plugin_id: str) -> ComposeResult:
        fit = (self.fits or {}).get(plugin_id)
        if fit is None:
            return
        if not fit.met:
            yield Static(t("fit.may_not_run", reason=fit.reason), classes="plugin-fit warning", id=f"fit-{plugin_id}")
        if fit.note:
            yield Static(fit.note, classes="plugin-fit muted", id=f"fit-note-{plugin_id}")

    def _plugin_cards(self, plugins: list[Plugin]) -> ComposeResult:
        from localqwen.frontend_hooks import view_hook

        yield Label(t("home.plugins", count=len(plugins)), classes="section-title")
        if not plugins:
            yield Static(t("home.no_plugins"), classes="muted")
        for plugin in plugins:
            with Vertical(classes="plugin-card", id=f"plugin-{plugin.id}"):
                yield Label(Text(plugin.title, style="bold"), classes="plugin-title")
                if plugin.description:
                    yield Static(plugin.description, classes="plugin-description")
                yield from self._fit_notes(plugin.id)
                # The plugin's own view first, then its actions: a plugin with many actions scrolls
                # sideways in a narrow terminal, and what leads to everything else stays in sight.
                with HorizontalScroll(classes="plugin-actions"):
                    if plugin.chats:
                        yield Button(t("chat.open"), id=f"chat-{plugin.id}", classes="chat-button", variant="success")
                    if plugin.guided_flow() is not None:
                        yield Button(t("wizard.open"), id=f"wizard-{plugin.id}", classes="wizard-button",
                                     variant="primary")
                    hook, problem = view_hook(plugin, "tui")
                    if hook is not None:
                        yield Button(t("home.custom_view"), id=f"view-{plugin.id}", classes="view-button",
                                     variant="primary")
                    for item in plugin.actions():
                        yield Button(item.title, id=f"action-{plugin.id}-{item.id}", classes="action-button",
                                     tooltip=item.description or None)
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

    @on(Button.Pressed, ".wizard-button")
    def _open_wizard(self, event: Button.Pressed) -> None:
        plugin = self.app.bench.host.get((event.button.id or "").removeprefix("wizard-"))  # type: ignore[attr-defined]
        self.app.open_wizard(plugin)  # type: ignore[attr-defined]

    @on(Button.Pressed, ".chat-button")
    def _open_chat(self, event: Button.Pressed) -> None:
        self.app.open_chat((event.button.id or "").removeprefix("chat-"))  # type: ignore[attr-defined]

    @on(Button.Pressed, ".view-button")
    def _open_view(self, event: Button.Pressed) -> None:
        plugin_id = (event.button.id or "").removeprefix("view-")
        self.app.open_custom_view(self.app.bench.host.get(plugin_id))  # type: ignore[attr-defined]
