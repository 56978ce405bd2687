"""The LocalQwen terminal UI: home, a screen per plugin action, chat, models, jobs, settings.

Work runs in the shared :class:`JobManager`, so a run keeps going (and can be reopened from the
jobs screen) after its screen is closed; screens follow a job from a thread worker and never
block the UI.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from localqwen.app import Workbench
from localqwen.i18n import current_language, set_language, t
from localqwen.plugin_api import Plugin
from localqwen.tui.screens.base import BaseScreen, retranslate_bindings

if TYPE_CHECKING:
    from localqwen.jobs import JobManager

NAV_BINDINGS = [
    Binding("f1", "switch_mode('home')", "Home", id="nav.home"),
    Binding("f2", "switch_mode('chat')", "Chat", id="nav.chat"),
    Binding("f3", "switch_mode('models')", "Models", id="nav.models"),
    Binding("f4", "switch_mode('jobs')", "Jobs", id="nav.jobs"),
    Binding("f5", "switch_mode('settings')", "Settings", id="nav.settings"),
    Binding("ctrl+q", "quit", "Quit", id="nav.quit", priority=True),
]


def _screen(module: str, name: str):
    """A mode's screen factory; the screen module is imported when the mode is first opened."""

    def make() -> Screen:
        import importlib

        return getattr(importlib.import_module(f"localqwen.tui.screens.{module}"), name)()

    return make


class LocalQwenApp(App[None]):
    CSS_PATH = "localqwen.tcss"
    TITLE = "LocalQwen"
    BINDINGS = NAV_BINDINGS  # type: ignore[assignment]
    MODES = {
        "home": _screen("home", "HomeScreen"),
        "chat": _screen("chat", "ChatScreen"),
        "models": _screen("models", "ModelsScreen"),
        "jobs": _screen("jobs", "JobsScreen"),
        "settings": _screen("settings", "SettingsScreen"),
    }

    def __init__(self, bench: Workbench | None = None) -> None:
        self.bench = bench or Workbench.create()
        set_language(self.bench.config.app.language)
        super().__init__()
        self.chat_plugin: str | None = None  # the plugin the chat screen talks to (None: the first)
        self.retranslate_bindings()
        if self.bench.config.app.theme in self.available_themes:
            self.theme = self.bench.config.app.theme

    @property
    def jobs(self) -> JobManager:
        return self.bench.services.jobs

    def on_mount(self) -> None:
        self.switch_mode("home")
        if self.bench.config_error is not None:
            self.notify(t("app.config_error", error=str(self.bench.config_error)), severity="warning", timeout=10)

    # -- language -----------------------------------------------------------------------------
    def retranslate_bindings(self) -> None:
        """Put the current language's words on the footer's key bindings."""
        retranslate_bindings(self)
        self.sub_title = t("app.subtitle")

    def change_language(self, language: str) -> None:
        set_language(language)
        self.retranslate_bindings()
        self.refresh_bindings()
        # The visible screen is rebuilt now; others when they are next shown (BaseScreen).
        screen = self.screen
        if isinstance(screen, BaseScreen):
            screen.language = current_language()
            retranslate_bindings(screen)
            screen.refresh(recompose=True)

    # -- navigation -----------------------------------------------------------------------------
    def open_action(self, plugin: Plugin, action_id: str) -> None:
        from localqwen.tui.screens.action import ActionScreen

        self.switch_mode("home")
        self.push_screen(ActionScreen(plugin, plugin.action(action_id)))

    def open_custom_view(self, plugin: Plugin) -> None:
        from localqwen.frontend_hooks import view_hook

        hook, problem = view_hook(plugin, "tui")
        if hook is None:
            self.notify(problem or t("home.no_custom_view"), severity="error")
            return
        try:
            screen = hook(self, plugin)
        except Exception as exc:
            self.notify(t("home.custom_view_failed", error=f"{type(exc).__name__}: {exc}"), severity="error")
            return
        self.switch_mode("home")
        self.push_screen(screen)

    def open_chat(self, plugin_id: str) -> None:
        """Show the chat screen talking to ``plugin_id`` (the screen picks it up when shown)."""
        self.chat_plugin = plugin_id
        self.switch_mode("chat")

    def open_job(self, job_id: str) -> None:
        from localqwen.tui.screens.jobs import JobScreen

        self.switch_mode("jobs")
        self.push_screen(JobScreen(job_id))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for mode in ("home", "chat", "models", "jobs", "settings"):
            yield SystemCommand(t(f"nav.{mode}"), t(f"palette.{mode}"), lambda m=mode: self.switch_mode(m))
        for plugin in self.bench.host.load_all():
            for item in plugin.actions():
                yield SystemCommand(f"{plugin.title} › {item.title}", item.description or plugin.description,
                                    lambda p=plugin, a=item.id: self.open_action(p, a))


def run_tui(bench: Workbench | None = None) -> None:
    LocalQwenApp(bench).run()


STYLESHEET = Path(__file__).with_name("localqwen.tcss")
