"""Plugin CLI shortcuts: ``localqwen NAME SUB ...`` runs ``localqwen run PLUGIN ACTION ...``.

A plugin registers one in its ``register`` hook with ``extensions.add_shortcut(name, help,
actions=(...))``; the captioner's gives ``localqwen coco download|to-json``. Each action becomes a
sub-command named after its id without the ``NAME-`` prefix. Its options are generated from the
action's form and it runs through the same code as ``run`` (:func:`run_cmd.run_with_options`), so a
shortcut behaves exactly like the long form. main.py asks here only for names that are not
built-in commands (see the comment there for why).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from localqwen.app import Workbench
    from localqwen.plugin_api import Action


def shortcut_command(name: str) -> Any:
    """The click command group for shortcut ``name``; None when no plugin registered it. Loads the plugins."""
    from localqwen.cli.common import workbench

    bench = workbench()
    shortcut = bench.extensions.shortcuts.get(name)
    if shortcut is None:
        # "No such command" follows; a plugin that failed to load may be why, so say which.
        for failure in bench.host.failures.values():
            typer.secho(f"warning: plugin '{failure.name}' skipped: {failure.reason}", fg="yellow", err=True)
        return None
    plugin = bench.host.get(shortcut.plugin_id)
    group = typer.Typer(name=name, help=shortcut.help, no_args_is_help=True, add_completion=False,
                        rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})
    # A group callback keeps Typer from collapsing a one-action shortcut into that action's command.
    group.callback()(_group_callback)
    for sub, action_id in shortcut.subcommands().items():
        action = plugin.action(action_id)
        group.command(
            sub,
            help=f"{action.description} (the same as `localqwen run {plugin.id} {action.id}`)",
            # The form's options are parsed by run_with_options, as `run` does, so --help lists them.
            context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
            add_help_option=False,
        )(_action_runner(bench, plugin.id, action, f"localqwen {name} {sub}"))
    return typer.main.get_command(group)


def _group_callback() -> None:
    """Nothing to do before the sub-command runs."""


def _action_runner(bench: Workbench, plugin_id: str, action: Action, prog: str) -> Callable[..., None]:
    def run_action(
        ctx: typer.Context,
        as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines."),
    ) -> None:
        from localqwen.cli.run_cmd import run_with_options

        run_with_options(bench, plugin_id, action, list(ctx.args), as_json, prog)

    return run_action
