"""Helpers shared by CLI commands."""

from __future__ import annotations

import typer

from localqwen.app import Workbench


def workbench() -> Workbench:
    """Create the workbench, warning (not failing) when the config file is broken."""
    bench = Workbench.create()
    if bench.config_error is not None:
        typer.secho(f"warning: {bench.config_error} (using defaults)", fg="yellow", err=True)
    return bench
