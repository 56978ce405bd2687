"""``localqwen config show|path|edit``."""

from __future__ import annotations

import typer

config_app = typer.Typer(help="Show, locate or edit the configuration file.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")


def _plugin_sections() -> dict:
    from localqwen.plugin_api import PluginHost

    host = PluginHost()
    return {p.id: p.config_model for p in host.load_all() if p.config_model is not None}


@config_app.command("path")
def path() -> None:
    """Print where the config file lives."""
    from localqwen.paths import app_paths

    typer.echo(str(app_paths().config_file))


@config_app.command("show")
def show(as_json: bool = typer.Option(False, "--json", help="Print the effective config as JSON.")) -> None:
    """Print the effective configuration (defaults plus the file)."""
    from localqwen.config import load_config
    from localqwen.paths import app_paths

    file = app_paths().config_file
    config, error = load_config(file)
    if error is not None:
        typer.secho(f"error: {error}", fg="red", err=True)
        typer.secho("showing defaults; fix the file with `localqwen config edit`", fg="yellow", err=True)
    if as_json:
        typer.echo(config.model_dump_json(indent=2))
        return
    from localqwen.vocabulary.toml_writer import toml_value

    for section in ("app", "runtime"):
        typer.echo(f"[{section}]")
        for key, value in getattr(config, section).model_dump().items():
            typer.echo(f"{key} = {toml_value(value)}")
        typer.echo("")
    for plugin_id, values in config.plugins.items():
        typer.echo(f"[plugins.{plugin_id}]")
        for key, value in values.items():
            typer.echo(f"{key} = {toml_value(value)}")
        typer.echo("")
    if error is not None:
        raise typer.Exit(1)


@config_app.command("edit")
def edit() -> None:
    """Open the config file in $EDITOR, creating a documented one first if missing."""
    from localqwen.config import load_config, write_default_config
    from localqwen.paths import app_paths

    file = app_paths().config_file
    if file.is_dir():
        typer.secho(f"error: {file} is a folder, but the config must be a file: move the folder away first",
                    fg="red", err=True)
        raise typer.Exit(1)
    if not file.exists():
        write_default_config(file, _plugin_sections())
        typer.echo(f"created {file}")
    import click

    click.edit(filename=str(file))
    _config, error = load_config(file)
    if error is not None:
        typer.secho(f"error: {error}", fg="red", err=True)
        raise typer.Exit(1)
