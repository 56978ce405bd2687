"""``localqwen``: the command-line entry point.

Each sub-command lives in its own module with a ``register(app)`` function; adding a command
means adding its module to ``COMMAND_MODULES``. These modules import only light libraries at
the top, so ``localqwen --help`` stays fast (a test checks it).
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup

COMMAND_MODULES = [
    "localqwen.cli.plugins_cmd",
    "localqwen.cli.run_cmd",
    "localqwen.cli.chat_cmd",
    "localqwen.cli.config_cmd",
    "localqwen.cli.tui_cmd",
    "localqwen.cli.web_cmd",
    "localqwen.cli.serve_cmd",
    "localqwen.cli.mcp_cmd",
    "localqwen.cli.train_cmd",
    "localqwen.cli.doctor_cmd",
    "localqwen.cli.models_cmd",
    "localqwen.cli.dev_cmd",
]


class CommandsThenShortcuts(TyperGroup):
    """The built-in commands, then the CLI shortcuts plugins register (``localqwen coco ...``).

    Shortcuts are looked up only for a name that is not a built-in command, and `--help` lists
    built-ins only: finding shortcuts means importing every plugin and calling its ``register``
    hook, measured at ~0.29 s against ~0.10 s for the whole of `localqwen --help` (typer alone:
    0.07 s), which would break the start-up goal (bench/bench_cli_start.py, ratio <= 1.5). A cached
    list was the other option; it would go stale whenever a plugin is installed, removed or
    changed, and the lazy look-up costs nothing on any built-in command.
    """

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:  # a click command, or None
        command = super().get_command(ctx, cmd_name)
        if command is None and not cmd_name.startswith("-") and not ctx.resilient_parsing:
            from localqwen.cli.shortcuts import shortcut_command

            command = shortcut_command(cmd_name)
        return command


app = typer.Typer(
    name="localqwen",
    cls=CommandsThenShortcuts,
    help="LocalQwen: a local workbench for Qwen3 and Qwen3-VL models.",
    epilog="Plugins can add commands too (the captioner's `localqwen coco`): `localqwen plugins` lists them.",
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: rich formatting costs ~110 ms at every start
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from localqwen import __version__

        typer.echo(f"localqwen {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """With no command, open the terminal UI when it is installed, else show this help."""
    if ctx.invoked_subcommand is not None:
        return
    tui = ctx.command.get_command(ctx, "tui") if hasattr(ctx.command, "get_command") else None
    if tui is not None:
        ctx.invoke(tui)
    else:
        typer.echo(ctx.get_help())


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
