"""``localqwen coco download|to-json``: the COCO caption pipeline, as in the seed's two scripts.

Both run the captioner plugin's actions (``coco-download``, ``coco-to-json``), so they behave
exactly like ``localqwen run captioner ...`` and the TUI / web forms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

coco_app = typer.Typer(help="Download COCO 2014 captions and convert them to training JSON.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(coco_app, name="coco")


def _run(action_id: str, values: dict[str, Any], as_json: bool) -> None:
    from localqwen.cli.common import run_and_print, workbench
    from localqwen.plugin_api import PluginLoadError

    bench = workbench()
    try:
        bench.host.get("captioner")
    except (KeyError, PluginLoadError) as exc:
        typer.secho(f"error: the captioner plugin is not available: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    values = {k: v for k, v in values.items() if v is not None}
    raise typer.Exit(run_and_print(bench, "captioner", action_id, values, as_json))


@coco_app.command("download")
def download(
    rows: int = typer.Option(500, "--rows", "-n", min=1, help="How many caption rows to fetch."),
    split: str = typer.Option("train", "--split", help="train, validation or test."),
    out: Path = typer.Option(None, "--out", "-o", help="Output folder (default: the captioner's data folder)."),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines."),
) -> None:
    """Fetch N rows of modelscope/coco_2014_caption from ModelScope: images/ + captions.csv."""
    _run("coco-download", {"rows": rows, "split": split, "output_dir": out}, as_json)


@coco_app.command("to-json")
def to_json(
    csv_file: Path = typer.Argument(..., help="Caption CSV (columns image_path, caption)."),
    out: Path = typer.Option(None, "--out", "-o", help="Output folder (default: beside the CSV)."),
    top_k: int = typer.Option(0, "--top-k", min=0, help="Keep the first K rows (0 = all)."),
    test_size: float = typer.Option(0.1, "--test-size", min=0, help="Test split: fraction (<1) or number of images."),
    prompt: str = typer.Option("COCO Yes:", "--prompt", help="The user prompt of every conversation."),
    seed: int = typer.Option(42, "--seed"),
    shuffle: bool = typer.Option(True, "--shuffle/--no-shuffle"),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines."),
) -> None:
    """Convert a caption CSV to Qwen3-VL conversation JSON (train + test, split by image)."""
    _run("coco-to-json", {"csv_file": str(csv_file), "output_dir": str(out) if out else None, "top_k": top_k,
                          "test_size": test_size, "prompt": prompt, "seed": seed, "shuffle": shuffle}, as_json)
