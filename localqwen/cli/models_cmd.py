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
    model: str = typer.Argument(..., help="Catalog id (see `localqwen models list`) or a hub repo id owner/name, "
                                          "e.g. Qwen/Qwen2.5-0.5B-Instruct."),
    gguf: bool = typer.Option(False, "--gguf", help="Download the GGUF (llama.cpp) variant."),
    quant: str = typer.Option(None, "--quant", help="GGUF quantization, e.g. Q4_K_M (a hub repo's default: Q4_K_M)."),
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
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # KeyError's str() adds quotes
        typer.secho(f"\nerror: {message}", fg="red", err=True)
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


@models_app.command("export")
def export(
    model: str = typer.Argument(..., metavar="MODEL_OR_RUN",
                                help="A training run folder, an adapter folder, a model folder or a downloaded catalog id."),
    quant: list[str] = typer.Option(["Q4_K_M"], "--quant", "-q",
                                    help="GGUF type, repeatable or comma-separated: Q4_K_M, Q5_K_M, Q8_0, F16, BF16 ..."),
    output_dir: str = typer.Option(None, "--output-dir", "-o",
                                   help="Where the GGUF files go (default: the app's outputs/gguf/NAME)."),
    base: str = typer.Option(None, "--base", help="The base model of an adapter that does not name it."),
    base_only: bool = typer.Option(False, "--base-only",
                                   help="Export the base model alone when the adapter cannot be merged (MoE-LoRA, MoT-LoRA)."),
    name: str = typer.Option(None, "--name", help="File-name stem (default: the run or model folder's name)."),
    threads: int = typer.Option(0, "--threads", help="Quantizing threads (0 = all cores)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON event per line."),
) -> None:
    """Export to GGUF for llama.cpp, Ollama and LM Studio: merge the adapter, convert (with the
    Qwen3-VL mmproj), quantize. Ctrl-C stops it and removes the partial files."""
    from pathlib import Path

    from localqwen.cli.event_printer import EventPrinter
    from localqwen.paths import app_paths
    from localqwen.training.gguf_export import ExportError, export_events, inspect_source
    from localqwen.vocabulary import events as ev
    from localqwen.vocabulary.cancel import Cancelled, CancelToken

    printer = EventPrinter(as_json=as_json)
    quants = [q for item in quant for q in item.split(",") if q.strip()]
    cancel = CancelToken()
    status, code = "failed", 1
    stream = None
    try:
        source = _local_source(model)
        plan = inspect_source(source, base=base)
        if plan.kind == "adapter":
            printer(ev.Log(message=f"{plan.describe()}: " + ("merged into the base before converting" if plan.mergeable
                                                             else f"cannot be merged ({plan.reason})")))
        out = Path(output_dir) if output_dir else app_paths().outputs_dir / "gguf" / (name or plan.name)
        stream = export_events(source, out, quants, base=base, name=name, base_only=base_only, threads=threads,
                               cancel=cancel)
        while True:
            try:
                printer(next(stream))
            except StopIteration as stop:
                result = stop.value
                break
        printer(ev.Done(summary=f"{len(result.files)} GGUF file(s) in {result.output_dir} ({result.seconds:.1f}s)",
                        result=result.as_dict()))
        status, code = "ok", 0
    except KeyboardInterrupt:
        cancel.cancel("interrupted (Ctrl-C)")
        if stream is not None:
            stream.close()  # stops the child process and removes the partial files before we say so
        printer(ev.Done(status="cancelled", summary="interrupted (Ctrl-C); partial files removed"))
        status, code = "cancelled", 130
    except Cancelled as exc:
        printer(ev.Done(status="cancelled", summary=str(exc)))
        status, code = "cancelled", 130
    except (ExportError, ValueError, KeyError, RuntimeError, OSError) as exc:
        printer(ev.Done(status="failed", summary=str(exc)))
        code = 2 if isinstance(exc, (ValueError, KeyError)) else 1
    finally:
        printer.close()
    if status != "ok":
        raise typer.Exit(code)


def _local_source(model: str) -> str:
    """A folder as given, or where a downloaded catalog model is (never downloads: export is local work)."""
    from pathlib import Path

    if Path(model).expanduser().exists() or model.startswith((".", "/", "~")):
        return model
    from localqwen.runtime import catalog

    entry = catalog.get(model)  # KeyError names the choices
    found = _manager().path(entry.id, "transformers")
    if found is None:
        raise ValueError(f"{entry.id} is not downloaded (export needs the safetensors model): "
                         f"localqwen models download {entry.id}")
    return str(found)
