"""``localqwen models list|download|remove|path``."""

from __future__ import annotations

import json

import typer

models_app = typer.Typer(help="List, download, remove and locate models.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")


def _manager():
    from localqwen.cli.doctor_cmd import runtime_services

    return runtime_services().models


@models_app.command("list")
def list_models(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every catalog model: size, licence, GGUF variants and whether it is on disk."""
    rows = _manager().list_models()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        gguf = f"  GGUF: {', '.join(q.split(':')[-1] for q in row['gguf'])}" if row["gguf"] else ""
        typer.echo(f"{row['id']:<24} {row['kind']:<9} {row['params_b']:>5.2f}B {row['size_gb']:>5.1f} GB  "
                   f"{row['license']:<18} {row['status']}{gguf}")


@models_app.command("download")
def download(
    model: str = typer.Argument(..., help="Catalog id (see `localqwen models list`)."),
    gguf: bool = typer.Option(False, "--gguf", help="Download the GGUF (llama.cpp) variant."),
    quant: str = typer.Option(None, "--quant", help="GGUF quantization, e.g. Q4_K_M."),
    hub: str = typer.Option(None, "--hub", help="huggingface or modelscope (default: config)."),
) -> None:
    """Download a model (resumes an interrupted download)."""
    from localqwen.runtime.downloads import DownloadError

    manager = _manager()
    state = {"shown": -1}

    def progress(done: float, total: float | None, message: str) -> None:
        if total:
            percent = int(done * 100 / total)
            if percent != state["shown"]:
                state["shown"] = percent
                typer.echo(f"\r{percent:3d}% {done / 1e6:,.0f} / {total / 1e6:,.0f} MB", nl=False, err=True)

    try:
        resolved = manager.download(model, format="gguf" if gguf or quant else "transformers", quant=quant,
                                    hub=hub, progress=progress)
    except (DownloadError, KeyError, ValueError) as exc:
        typer.secho(f"\nerror: {exc}", fg="red", err=True)
        raise typer.Exit(1) from exc
    typer.echo("", err=True)
    typer.echo(str(resolved.path))


@models_app.command("remove")
def remove(
    model: str = typer.Argument(..., help="Catalog id."),
    gguf_only: bool = typer.Option(False, "--gguf", help="Remove only the GGUF files."),
) -> None:
    """Delete a downloaded model from the hub cache."""
    try:
        removed = _manager().remove(model, format="gguf" if gguf_only else None)
    except KeyError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(1) from exc
    if not removed:
        typer.echo(f"{model} was not downloaded; nothing removed")
    for path in removed:
        typer.echo(f"removed {path}")


@models_app.command("path")
def path(
    model: str = typer.Argument(..., help="Catalog id."),
    gguf: bool = typer.Option(False, "--gguf", help="The GGUF file instead of the model folder."),
) -> None:
    """Print where a model is on disk (exit 1 when it is not downloaded)."""
    from localqwen.runtime import catalog

    manager = _manager()
    try:
        entry = catalog.get(model)
    except KeyError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(1) from exc
    if entry.wheel:
        typer.echo(str(manager.resolve(entry.id).path))
        return
    found = manager.path(entry.id, "gguf" if gguf else "transformers")
    if found is None:
        typer.secho(f"{entry.id} is not downloaded; run `localqwen models download {entry.id}`", fg="yellow", err=True)
        raise typer.Exit(1)
    typer.echo(str(found))
