"""The LocalQwen terminal UI: home, a screen per plugin action, chat, models, jobs, settings.

Work runs in the shared :class:`JobManager`, so a run keeps going (and can be reopened from the
jobs screen) after its screen is closed; screens follow a job from a thread worker and never
block the UI.

Start-up paints first and loads after: the first frame needs only the config file's language and
theme (read as plain TOML) and the plugins' entry-point names (metadata), so this module imports
neither the config models, the plugin API nor the runtime. The workbench is built after the first
frame, by the home screen's worker (:attr:`LocalQwenApp.bench`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from localqwen.i18n import current_language, resolve_language, set_language, t
from localqwen.paths import app_paths
from localqwen.tui.screens.base import BaseScreen, retranslate_bindings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

if TYPE_CHECKING:
    from localqwen.app import Workbench
    from localqwen.jobs import JobManager
    from localqwen.plugin_api import Plugin

NAV_BINDINGS = [
    Binding("f1", "go_home", "Home", id="nav.home"),
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
    # The app starts in the home mode itself: switching to it from Textual's blank default screen
    # would parse the whole stylesheet twice more before the first frame.
    DEFAULT_MODE = "home"
    MODES = {
        "home": _screen("home", "HomeScreen"),
        "chat": _screen("chat", "ChatScreen"),
        "models": _screen("models", "ModelsScreen"),
        "jobs": _screen("jobs", "JobsScreen"),
        "settings": _screen("settings", "SettingsScreen"),
    }

    def __init__(self, bench: Workbench | None = None) -> None:
        """Without ``bench`` the workbench is built after the first frame (see :attr:`bench`)."""
        self._bench = bench
        self._bench_lock = threading.Lock()
        look = first_frame_look() if bench is None else {"language": bench.config.app.language,
                                                          "theme": bench.config.app.theme}
        set_language(look.get("language", "auto"))
        super().__init__()
        self.chat_plugin: str | None = None  # the plugin the chat screen talks to (None: the first)
        self.retranslate_bindings()
        if look.get("theme") in self.available_themes:
            self.theme = look["theme"]

    @property
    def bench(self) -> Workbench:
        """The workbench (config, plugins, services). Built on first use when none was given:
        normally by the home screen's worker thread right after the first frame."""
        if self._bench is None:
            with self._bench_lock:
                if self._bench is None:
                    from localqwen.app import Workbench

                    self._bench = Workbench.create()
                    # The first frame followed a plain read of the file; adopt the validated
                    # config on the UI thread (it differs only when the file is broken).
                    self.call_later(self._adopt_config, self._bench)
        return self._bench

    def _adopt_config(self, bench: Workbench) -> None:
        app_config = bench.config.app
        if resolve_language(app_config.language) != current_language():
            self.change_language(app_config.language)
        if app_config.theme != self.theme and app_config.theme in self.available_themes:
            self.theme = app_config.theme
        self._warn_config_error(bench)

    def _warn_config_error(self, bench: Workbench) -> None:
        if bench.config_error is not None:
            self.notify(t("app.config_error", error=str(bench.config_error)), severity="warning", timeout=10)

    @property
    def jobs(self) -> JobManager:
        return self.bench.services.jobs

    def on_mount(self) -> None:
        self.call_after_refresh(self._load_screen_styles)
        if self._bench is not None:
            self._warn_config_error(self._bench)

    def _load_screen_styles(self) -> None:
        """Read the other screens' rules after the first frame (a screen opened sooner is
        restyled when they arrive)."""
        if not self.stylesheet.has_source(str(SCREENS_STYLESHEET)):
            self.stylesheet.read(SCREENS_STYLESHEET)
            self.refresh_css(animate=False)

    # -- language -----------------------------------------------------------------------------
    def retranslate_bindings(self) -> None:
        """Put the current language's words on the footer's key bindings."""
        retranslate_bindings(self)
        self.sub_title = t("app.subtitle")

    def change_language(self, language: str) -> None:
        set_language(language)
        retranslate_bindings(self)
        self.refresh_bindings()
        # The visible screen is rebuilt now; others when they are next shown (BaseScreen).
        screen = self.screen
        if isinstance(screen, BaseScreen):
            screen.language = current_language()
            retranslate_bindings(screen)
            self.run_worker(self._rebuild(screen), group="language")
        else:
            self.sub_title = t("app.subtitle")

    async def _rebuild(self, screen: Screen) -> None:
        """Recompose ``screen``, then retitle: a subtitle set while the header is being replaced
        sends Textual's old header looking for a title widget that is gone (an error)."""
        await screen.recompose()
        self.sub_title = t("app.subtitle")

    # -- navigation -----------------------------------------------------------------------------
    def action_go_home(self) -> None:
        """F1: the home screen itself, not the form or view last opened from it (those are
        pushed on the home mode's stack, which switching modes alone would show again)."""
        self.switch_mode("home")
        for _ in range(len(self.screen_stack) - 1):
            self.pop_screen()

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

    def open_wizard(self, plugin: Plugin) -> None:
        """Show ``plugin``'s guided flow (see ``Plugin.guided_flow``) over the home screen."""
        from localqwen.tui.screens.wizard import open_wizard

        self.switch_mode("home")
        self.push_screen(open_wizard(self, plugin))

    def open_job(self, job_id: str) -> None:
        from localqwen.tui.screens.jobs import JobScreen

        self.switch_mode("jobs")
        self.push_screen(JobScreen(job_id))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for mode in ("home", "chat", "models", "jobs", "settings"):
            yield SystemCommand(t(f"nav.{mode}"), t(f"palette.{mode}"), lambda m=mode: self.switch_mode(m))
        for plugin in self.bench.host.load_all():
            yield from self.plugin_commands(plugin)

    def plugin_commands(self, plugin: Plugin) -> Iterable[SystemCommand]:
        """What the plugin's home card offers, as palette commands titled "Plugin › button" in the
        card's order: its chat, its wizard, its actions, its custom view (the home screen's buttons
        and these must agree; tests/frontends/test_palette_tui.py checks it). The wizard comes before
        the actions, so typing "wizard" puts it above an action whose title merely starts with it."""
        from localqwen.frontend_hooks import view_hook

        if plugin.chats:
            yield SystemCommand(f"{plugin.title} › {t('chat.open')}", t("palette.plugin_chat", plugin=plugin.title),
                                lambda p=plugin.id: self.open_chat(p))
        flow = plugin.guided_flow()
        if flow is not None:
            yield SystemCommand(f"{plugin.title} › {t('wizard.open')}",
                                t("palette.wizard", flow=flow.title, count=len(flow.steps)),
                                lambda p=plugin: self.open_wizard(p))
        for item in plugin.actions():
            yield SystemCommand(f"{plugin.title} › {item.title}", item.description or plugin.description,
                                lambda p=plugin, a=item.id: self.open_action(p, a))
        hook, _ = view_hook(plugin, "tui")
        if hook is not None:
            yield SystemCommand(f"{plugin.title} › {t('home.custom_view')}", plugin.description,
                                lambda p=plugin: self.open_custom_view(p))


def first_frame_look() -> dict[str, Any]:
    """The ``[app] language`` and ``theme`` the config file sets, for the first frame, read as
    plain TOML: the config models (pydantic) load after that frame. What is missing or unreadable
    is left out (the frame uses the system locale and Textual's theme); the validated config then
    decides, and reports what is broken."""
    try:
        with app_paths().config_file.open("rb") as handle:
            section = tomllib.load(handle).get("app", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    if not isinstance(section, dict):
        return {}
    return {key: section[key] for key in ("language", "theme") if isinstance(section.get(key), str)}


def run_tui(bench: Workbench | None = None) -> None:
    LocalQwenApp(bench).run()


STYLESHEET = Path(__file__).with_name("localqwen.tcss")
SCREENS_STYLESHEET = Path(__file__).with_name("screens.tcss")
