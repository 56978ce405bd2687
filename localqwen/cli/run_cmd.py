"""``localqwen run PLUGIN ACTION --field value ...``: any plugin action, scripted.

The options come from the action's Form, so every action is scriptable without CLI code of its
own. ``--json`` prints one JSON event per line. Exit codes: 0 ok, 1 failed, 2 bad input,
130 cancelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import click
import typer

if TYPE_CHECKING:
    from localqwen.app import Workbench
    from localqwen.plugin_api import Action


def register(app: typer.Typer) -> None:
    app.command(
        "run",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )(run)


def run(
    ctx: typer.Context,
    plugin_id: str = typer.Argument(None, metavar="PLUGIN", help="Plugin id (see `localqwen plugins`)."),
    action_id: str = typer.Argument(None, metavar="ACTION", help="Action id; omit to list the plugin's actions."),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines."),
) -> None:
    """Run a plugin action with options generated from its form. `run PLUGIN ACTION --help` lists them."""
    from localqwen.cli.common import workbench
    from localqwen.plugin_api import PluginLoadError

    args = list(ctx.args)
    # `run PLUGIN --help` lands in ACTION (options are passed through unparsed), so look there too.
    wants_help = bool({"--help", "-h"} & {*args, action_id, plugin_id})
    if plugin_id is None or plugin_id in ("--help", "-h"):  # unknown options pass through, --help too
        _print_help(ctx)
        raise typer.Exit(0 if wants_help else 2)
    bench = workbench()
    try:
        plugin = bench.host.get(plugin_id)
    except (KeyError, PluginLoadError) as exc:
        typer.secho(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    if action_id is None or action_id.startswith("-"):
        typer.echo(f"{plugin.title}: {plugin.description}\n\nActions:")
        for item in plugin.actions():
            typer.echo(f"  {item.id:<20} {item.description}")
        if plugin.chats:
            typer.echo(f"\nThis plugin chats: localqwen chat --plugin {plugin.id}")
        raise typer.Exit(0 if action_id is None or wants_help else 2)
    try:
        action = plugin.action(action_id)
    except KeyError as exc:
        typer.secho(f"error: {exc.args[0]}", fg="red", err=True)
        raise typer.Exit(2) from None
    run_with_options(bench, plugin_id, action, args, as_json, f"localqwen run {plugin_id} {action_id}")


def _print_help(ctx: typer.Context) -> None:
    """The command's usage, then the installed plugins (read from their metadata, none imported)."""
    typer.echo(ctx.get_help())
    try:
        from localqwen.plugin_api import PluginHost

        names = [info.name for info in PluginHost().available()]
    except Exception as exc:  # a broken plugin setup must not hide the help text
        typer.echo(f"\n(plugins could not be listed: {exc})")
        return
    if names:
        typer.echo(f"\nPlugins: {', '.join(names)}\n`localqwen run PLUGIN` lists its actions; "
                   "`localqwen run PLUGIN ACTION --help` their options.")


def run_with_options(bench: Workbench, plugin_id: str, action: Action, args: list[str], as_json: bool,
                     prog: str) -> NoReturn:
    """Parse ``args`` with options generated from the action's form, run it, print its events and
    exit with its code. `run` and every plugin's CLI shortcut (shortcuts.py) end here."""
    from localqwen.cli.common import run_and_print
    from localqwen.cli.form_options import form_command

    command = form_command(action.form, prog, action.description)
    try:
        values = command.main(args, prog_name=command.name, standalone_mode=False)
    except click.exceptions.Exit as exc:  # --help was printed
        raise typer.Exit(exc.exit_code) from None
    except click.ClickException as exc:
        exc.show()
        raise typer.Exit(2) from None
    if not isinstance(values, dict):  # click printed --help and returned its exit code
        raise typer.Exit(values or 0)

    raise typer.Exit(run_and_print(bench, plugin_id, action.id, values, as_json))
