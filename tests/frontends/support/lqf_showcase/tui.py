"""The showcase plugin's bespoke TUI view (the optional ``open_view`` hook)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static


class ShowcaseView(Screen[None]):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, plugin) -> None:
        super().__init__()
        self.plugin = plugin

    def compose(self) -> ComposeResult:
        yield Static(f"Bespoke view of {self.plugin.title}", id="showcase-bespoke")
        yield Footer()


def open_view(app, plugin) -> Screen:
    return ShowcaseView(plugin)
