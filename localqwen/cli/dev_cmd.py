"""``localqwen dev tiny-model``: build tiny random-weight Qwen3 / Qwen3-VL models for offline use."""

from __future__ import annotations

from pathlib import Path

import typer

dev_app = typer.Typer(help="Developer tools (tiny offline models).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(dev_app, name="dev")


@dev_app.command("tiny-model")
def tiny_model(
    out: Path = typer.Argument(..., help="Folder to write the model into."),
    vision: bool = typer.Option(False, "--vision", help="Build a tiny Qwen3-VL (images) instead of Qwen3."),
) -> None:
    """Write a tiny random-weight model (real transformers classes, Qwen tokens and template)."""
    from localqwen.testing.tiny_models import build_tiny_qwen3, build_tiny_qwen3_vl

    if out.exists() and any(out.iterdir()):
        typer.secho(f"error: {out} exists and is not empty", fg="red", err=True)
        raise typer.Exit(1)
    path = (build_tiny_qwen3_vl if vision else build_tiny_qwen3)(out)
    typer.echo(str(path))
    typer.echo(f"try it: localqwen run <plugin> <action> --model {path}  (random weights: output is noise)", err=True)
