"""``localqwen tui`` (also what plain ``localqwen`` opens): the Textual terminal UI."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)


def tui() -> None:
    """Open the terminal UI: plugins, chat, models, jobs and settings."""
    from localqwen.tui.app import run_tui

    # No workbench here: the TUI paints its first frame, then builds it (and reports a broken
    # config file in the UI).
    run_tui()
