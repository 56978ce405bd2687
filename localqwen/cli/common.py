"""Helpers shared by CLI commands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from localqwen.app import Workbench
from localqwen.vocabulary.exit_codes import exit_code


def workbench() -> Workbench:
    """Create the workbench, warning (not failing) when the config file is broken."""
    bench = Workbench.create()
    if bench.config_error is not None:
        typer.secho(f"warning: {bench.config_error} (using defaults)", fg="yellow", err=True)
    return bench


def run_and_print(bench: Workbench, plugin_id: str, action_id: str, values: Mapping[str, Any], as_json: bool) -> int:
    """Run one action, print its events, and return the exit code (2 for bad input).

    Ctrl-C cancels the work cleanly and exits 130.
    """
    from localqwen.cli.event_printer import EventPrinter
    from localqwen.plugin_api import CancelToken, FormError
    from localqwen.plugin_api import events as ev

    printer = EventPrinter(as_json=as_json)
    cancel = CancelToken()
    try:
        stream = bench.run(plugin_id, action_id, values, cancel=cancel)
    except FormError as exc:
        for name, message in exc.errors.items():
            printer(ev.Error(message=message, field="--" + name.replace("_", "-")))
        return 2
    status = "failed"
    try:
        for event in stream:
            printer(event)
            if isinstance(event, ev.Done):
                status = event.status
    except KeyboardInterrupt:
        cancel.cancel("interrupted (Ctrl-C)")
        printer(ev.Done(status="cancelled", summary="interrupted (Ctrl-C)"))
        status = "cancelled"
    finally:
        printer.close()
    return exit_code(status)
