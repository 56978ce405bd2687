"""``localqwen tui`` (also what plain ``localqwen`` opens): the Textual terminal UI."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)


def tui() -> None:
    """Open the terminal UI: plugins, chat, models, jobs and settings."""
    from localqwen.cli.common import workbench
    from localqwen.tui.app import run_tui

    run_tui(workbench())
