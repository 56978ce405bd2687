"""The Captioner plugin: caption images with Qwen3-VL, compare an adapter with its base model,
download and convert COCO captions, and score captions (BLEU-4, ROUGE-L, CIDEr).

Every action is a form + an event stream, so the CLI (``localqwen run captioner caption ...``),
the TUI and the web view all get it. Heavy work lives in the sibling modules; this file wires
forms to them.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic import Field as PydanticField

from localqwen.atomic import atomic_write_text
from localqwen.plugin_api import Context, Extensions, Form, Plugin, Requirements, action, field
from localqwen.plugin_api import events as ev
from localqwen_captioner.batch import BatchOptions, BatchSummary, CaptionJournal, caption_images, image_key
from localqwen_captioner.images import IMAGE_EXTENSIONS, find_images

Preset = Literal["short", "detailed", "coco", "tags", "chinese", "custom"]
GALLERY_SIZE = 12  # images shown with their captions after a folder run


class CaptionerSettings(BaseModel):
    """``[plugins.captioner]`` in the config file (``localqwen config edit`` writes it)."""

    model: str = PydanticField("", description="Vision model for captions (catalog id, folder or .gguf with its "
                                                "mmproj beside it); empty = the default. A form's Model field overrides it.")


def _source_field() -> Any:
    return field(label="Images", widget="folder", help="An image file, or a folder captioned recursively.")


def _model_field() -> Any:
    return field("", label="Model", help="Qwen3-VL model id or local folder; empty = the configured default.")


def _adapter_field(required: bool = False) -> Any:
    help_text = "Adapter folder (LoRA, MoE-LoRA, MoT-LoRA, IA3) trained on the model."
    if required:
        return field(label="Adapter", widget="folder", help=help_text)
    return field(None, label="Adapter", widget="folder", help=help_text + " Optional.")


class CaptionForm(Form):
    source: Path = _source_field()
    prompt_preset: Preset = field("short", label="Prompt", help="A preset, or 'custom' to use your own prompt.")
    custom_prompt: str = field("", label="Custom prompt", widget="textarea",
                               help="Used instead of the preset when not empty.")
    model: str = _model_field()
    adapter: Path | None = _adapter_field()
    output_dir: Path | None = field(None, label="Output folder", widget="folder",
                                    help="Where captions.csv / captions.jsonl go; empty = one per source folder "
                                         "in LocalQwen's outputs (re-running resumes there).")
    write_txt: bool = field(False, label="Write .txt beside each image",
                            help="image.jpg -> image.txt, the convention image-model training tools read.")
    overwrite_txt: bool = field(False, label="Overwrite existing .txt", advanced=True)
    resume: bool = field(True, label="Resume", help="Skip images already captioned with the same model and prompt.")
    batch_size: int = field(4, label="Batch size", ge=1, le=64, help="Images per model call.")
    max_new_tokens: int = field(96, label="Max caption tokens", ge=4, le=1024, advanced=True)
    max_side: int = field(768, label="Max image side (px)", ge=64, le=4096, advanced=True,
                          help="Larger images are shrunk first: faster, and what the model sees anyway.")
    recursive: bool = field(True, label="Include subfolders", advanced=True)
    extensions: str = field(",".join(IMAGE_EXTENSIONS), label="Extensions", advanced=True)
    limit: int = field(0, label="At most N images", ge=0, advanced=True, help="0 = all.")


class CompareForm(Form):
    source: Path = _source_field()
    adapter: Path = _adapter_field(required=True)
    model: str = _model_field()
    prompt_preset: Preset = field("coco", label="Prompt")
    custom_prompt: str = field("", label="Custom prompt", widget="textarea")
    references: Path | None = field(None, label="Reference captions", widget="file",
                                    help="Optional COCO annotations JSON, conversation JSON or caption CSV: adds "
                                         "a reference column and BLEU/ROUGE/CIDEr for both.")
    limit: int = field(8, label="Images", ge=1, le=500)
    batch_size: int = field(4, label="Batch size", ge=1, le=64, advanced=True)
    max_new_tokens: int = field(64, label="Max caption tokens", ge=4, le=1024, advanced=True)
    max_side: int = field(768, label="Max image side (px)", ge=64, le=4096, advanced=True)


class CocoDownloadForm(Form):
    rows: int = field(500, label="Rows", ge=1, le=1_000_000, help="How many caption rows to fetch.")
    split: Literal["train", "validation", "test"] = field("train", label="Split")
    output_dir: Path | None = field(None, label="Output folder", widget="folder",
                                    help="Empty = coco_2014_caption in the plugin's data folder.")


class CocoToJsonForm(Form):
    csv_file: Path = field(label="Caption CSV", widget="file", help="Columns image_path, caption.")
    output_dir: Path | None = field(None, label="Output folder", widget="folder", help="Empty = beside the CSV.")
    top_k: int = field(0, label="First N rows", ge=0, help="0 = all rows.")
    test_size: float = field(0.1, label="Test split", ge=0,
                             help="Below 1: fraction of images; 1 or more: number of images. Split by image.")
    prompt: str = field("COCO Yes:", label="Prompt", help="The user turn of every conversation.")
    shuffle: bool = field(True, label="Shuffle before splitting")
    seed: int = field(42, label="Seed", advanced=True)


class MetricsForm(Form):
    references: Path = field(label="Reference captions", widget="file",
                             help="COCO annotations JSON, conversation JSON (e.g. a test split) or caption CSV.")
    images_dir: Path | None = field(None, label="Images folder", widget="folder",
                                    help="For COCO annotations: where the images are (default: the split's folder).")
    predictions: Path | None = field(None, label="Captions to score", widget="file",
                                     help="A captions.jsonl / captions.csv from a caption run; empty = caption now.")
    model: str = _model_field()
    adapter: Path | None = _adapter_field()
    also_base: bool = field(True, label="Also score the base model", help="With an adapter: before vs after.")
    prompt_preset: Literal["auto", "short", "detailed", "coco", "tags", "chinese", "custom"] = field(
        "auto", label="Prompt", help="auto = the prompt stored in conversation JSON, else the COCO prompt.")
    custom_prompt: str = field("", label="Custom prompt", widget="textarea")
    limit: int = field(50, label="At most N images", ge=0, help="0 = all.")
    batch_size: int = field(4, label="Batch size", ge=1, le=64, advanced=True)
    max_new_tokens: int = field(48, label="Max caption tokens", ge=4, le=1024, advanced=True)
    max_side: int = field(768, label="Max image side (px)", ge=64, le=4096, advanced=True)
    output_dir: Path | None = field(None, label="Output folder", widget="folder", advanced=True)


class Captioner(Plugin):
    id = "captioner"
    title = "Captioner"
    description = "Caption images with Qwen3-VL, compare adapters, and build and score COCO caption data."
    # Qwen3-VL 2B (the default) as GGUF Q4_K_M: ~1.9 GB by the device plan, plus its F16 vision
    # projector (~0.8 GB) and a batch of images.
    requirements = Requirements(task="vision", min_memory_gb=3.0)
    config_model = CaptionerSettings

    def register(self, extensions: Extensions) -> None:
        """The COCO data source and caption metric for the trainer, and ``localqwen coco download|to-json``."""
        from localqwen_captioner.data_sources import register

        register(extensions)
        extensions.add_shortcut("coco", "Download COCO 2014 captions and convert them to training JSON.",
                                actions=("coco-download", "coco-to-json"))

    # -- caption ----------------------------------------------------------------------------------
    @action(form=CaptionForm, title="Caption images",
            description="Caption one image or a folder; CSV + JSONL (+ .txt), resumable.")
    def caption(self, form: CaptionForm, ctx: Context):
        from localqwen_captioner.prompts import resolve_prompt

        prompt = resolve_prompt(form.prompt_preset, form.custom_prompt)
        extensions = tuple(e.strip().lower() if e.strip().startswith(".") else "." + e.strip().lower()
                           for e in form.extensions.split(",") if e.strip())
        source = form.source.expanduser()
        images = find_images(source, recursive=form.recursive, extensions=extensions)
        if form.limit:
            images = images[: form.limit]
        if not images:
            raise ValueError(f"no images with extensions {', '.join(extensions)} in {source}")
        root = source if source.is_dir() else source.parent
        out_dir = form.output_dir or _default_output_dir(ctx, source)
        journal = CaptionJournal(out_dir)
        yield ev.Log(message=f"{len(images)} images; results in {out_dir}")
        engine = ctx.engine(form.model or None, adapter=form.adapter, task="vision")
        options = BatchOptions(model=_model_label(engine, form.model), adapter=str(form.adapter or ""), prompt=prompt,
                               batch_size=form.batch_size, max_side=form.max_side, write_txt=form.write_txt,
                               overwrite_txt=form.overwrite_txt, resume=form.resume)
        caption_fn = _captioner(engine, prompt, form.max_new_tokens, ctx)
        summary = BatchSummary()
        keys = {image_key(path, root) for path in images}
        # What caption_images will skip (resume) and so not stream: the table below shows those.
        earlier = {key for key in keys if options.resume and journal.is_done(key, options.model, options.adapter,
                                                                            options.prompt)}
        yield from caption_images(images, root, caption_fn, journal, options, ctx.cancel, summary)
        records = [r for r in journal.records.values() if r.image in keys]
        previews = ctx.outputs_dir / "previews" / _folder_id(source)
        for record in [r for r in records if r.status == "ok"][:GALLERY_SIZE]:
            # The caption was streamed as text already: the gallery names the image only.
            yield ev.Image(path=_preview(Path(record.path), record.image, previews), caption=record.image)
        # Captions this run streamed are not repeated; the table holds what it did not show:
        # images captioned by an earlier run (resume) and failures, with their reason.
        unseen = [r for r in records if r.status != "ok" or r.image in earlier]
        if unseen:
            yield ev.Table(title="Captions from earlier runs and failures",
                           columns=["image", "status", "caption or error"],
                           rows=[[r.image, r.status, r.caption or r.error] for r in sorted(unseen, key=lambda r: r.image)])
        yield ev.FileWritten(path=str(journal.csv_path), description="captions (CSV)")
        yield ev.FileWritten(path=str(journal.jsonl_path), description="captions (JSON lines)")
        result = {**summary.as_dict(), "csv": str(journal.csv_path), "jsonl": str(journal.jsonl_path),
                  "output_dir": str(out_dir)}
        if len(images) == 1 and records and records[0].status == "ok":
            result["caption"] = records[0].caption
        yield ev.Done(result=result, summary=f"{summary.captioned} captioned, {summary.errors} failed, "
                                             f"{summary.skipped} already done")

    # -- compare ----------------------------------------------------------------------------------
    @action(form=CompareForm, title="Compare with adapter",
            description="Base model vs adapter captions side by side, as a gallery and a table.")
    def compare(self, form: CompareForm, ctx: Context):
        from localqwen_captioner.coco import read_references
        from localqwen_captioner.metrics import score_captions
        from localqwen_captioner.prompts import resolve_prompt

        prompt = resolve_prompt(form.prompt_preset, form.custom_prompt)
        source = form.source.expanduser()
        root = source if source.is_dir() else source.parent
        refs = read_references(form.references) if form.references else {}
        images = find_images(source)
        if refs:  # only images that have references, so every row can be scored
            images = [path for path in images if path.resolve() in refs]
        images = images[: form.limit]
        if not images:
            raise ValueError(f"no images to compare in {source}" + (" that have reference captions" if refs else ""))
        out_dir = ctx.outputs_dir / "compare" / _folder_id(source, form.adapter)
        captions: dict[str, dict[str, str]] = {}
        for label, adapter in (("base", None), ("adapter", form.adapter)):
            yield ev.Step(step=label, title=f"Captioning with the {label} model")
            engine = ctx.engine(form.model or None, adapter=adapter, task="vision")
            journal = CaptionJournal(out_dir / label)
            options = BatchOptions(model=_model_label(engine, form.model), adapter=str(adapter or ""), prompt=prompt,
                                   batch_size=form.batch_size, max_side=form.max_side)
            yield from caption_images(images, root, _captioner(engine, prompt, form.max_new_tokens, ctx),
                                      journal, options, ctx.cancel)
            captions[label] = {r.image: (r.caption if r.status == "ok" else f"[error] {r.error}")
                               for r in journal.records.values()}
            yield ev.Step(step=label, title=f"Captioning with the {label} model", status="finished")
        rows = []
        for path in images:
            key = image_key(path, root)
            base, tuned = captions["base"].get(key, ""), captions["adapter"].get(key, "")
            reference = refs.get(path.resolve(), [""])[0]
            text = f"base: {base}\nadapter: {tuned}" + (f"\nreference: {reference}" if reference else "")
            yield ev.Image(path=_preview(path, key, out_dir / "previews"), caption=text)
            rows.append([key, base, tuned] + ([reference] if refs else []))
        columns = ["image", "base", "adapter"] + (["reference"] if refs else [])
        yield ev.Table(title="Base vs adapter", columns=columns, rows=rows)
        result: dict[str, Any] = {"images": len(rows), "output_dir": str(out_dir)}
        if refs:
            keyed_refs = {image_key(path, root): refs[path.resolve()] for path in images}
            scores = {label: score_captions(keyed_refs, captions[label]).as_dict() for label in captions}
            yield _scores_table(scores)
            result["scores"] = scores
        compare_csv = out_dir / "compare.csv"
        _write_rows_csv(compare_csv, columns, rows)
        yield ev.FileWritten(path=str(compare_csv), description="base vs adapter captions")
        yield ev.Done(result=result, summary=f"{len(rows)} images compared")

    # -- COCO -------------------------------------------------------------------------------------
    @action(form=CocoDownloadForm, id="coco-download", title="Download COCO captions",
            description="Fetch N rows of modelscope/coco_2014_caption: images + captions.csv.")
    def coco_download(self, form: CocoDownloadForm, ctx: Context):
        from localqwen_captioner.coco import download_coco

        out_dir = form.output_dir or ctx.data_dir / "coco_2014_caption"
        yield from download_coco(out_dir, form.rows, split=form.split, cancel=ctx.cancel)

    @action(form=CocoToJsonForm, id="coco-to-json", title="COCO CSV to training JSON",
            description="Caption CSV -> Qwen3-VL conversation JSON (train/test split by image).")
    def coco_to_json(self, form: CocoToJsonForm, ctx: Context):
        from localqwen_captioner.coco import csv_to_conversations

        out_dir = form.output_dir or form.csv_file.expanduser().parent
        result = csv_to_conversations(form.csv_file.expanduser(), out_dir, top_k=form.top_k or None,
                                      test_size=form.test_size, prompt=form.prompt, seed=form.seed,
                                      shuffle=form.shuffle)
        yield ev.FileWritten(path=str(result.train_path), description=f"{result.train_rows} training conversations")
        if result.test_path:
            yield ev.FileWritten(path=str(result.test_path), description=f"{result.test_rows} test conversations")
        yield ev.Done(result={"train": str(result.train_path), "test": str(result.test_path or ""),
                              "train_rows": result.train_rows, "test_rows": result.test_rows},
                      summary=f"{result.train_rows} train / {result.test_rows} test conversations")

    # -- metrics ----------------------------------------------------------------------------------
    @action(form=MetricsForm, title="Caption metrics",
            description="BLEU-4, ROUGE-L and CIDEr of a model, an adapter (before/after) or saved captions.")
    def metrics(self, form: MetricsForm, ctx: Context):
        from localqwen_captioner.coco import COCO_PROMPT, conversation_prompt, read_references
        from localqwen_captioner.metrics import score_captions
        from localqwen_captioner.prompts import resolve_prompt

        refs = read_references(form.references.expanduser(), form.images_dir)
        images = sorted(refs)
        if form.limit:
            images = images[: form.limit]
        scores: dict[str, dict[str, Any]] = {}
        if form.predictions:
            predictions = _read_predictions(form.predictions.expanduser())
            scored = {str(path): predictions[str(path)] for path in images if str(path) in predictions}
            if not scored:
                raise ValueError(f"{form.predictions.name} has no captions for the reference images")
            scores["captions"] = score_captions({str(p): refs[p] for p in images}, scored).as_dict()
        else:
            if form.prompt_preset == "auto" and not form.custom_prompt.strip():
                prompt = conversation_prompt(form.references) or COCO_PROMPT
            else:
                prompt = resolve_prompt("coco" if form.prompt_preset == "auto" else form.prompt_preset,
                                        form.custom_prompt)
            runs = [("adapter", form.adapter)] if form.adapter else [("base", None)]
            if form.adapter and form.also_base:
                runs.insert(0, ("base", None))
            out_dir = form.output_dir or ctx.outputs_dir / "metrics" / _folder_id(form.references, form.adapter)
            for label, adapter in runs:
                yield ev.Step(step=label, title=f"Captioning with the {label} model")
                engine = ctx.engine(form.model or None, adapter=adapter, task="vision")
                journal = CaptionJournal(out_dir / label)
                options = BatchOptions(model=_model_label(engine, form.model), adapter=str(adapter or ""),
                                       prompt=prompt, batch_size=form.batch_size, max_side=form.max_side)
                # Keys are absolute paths, so references from any folder layout line up.
                yield from caption_images(images, Path("/"), _captioner(engine, prompt, form.max_new_tokens, ctx),
                                          journal, options, ctx.cancel)
                # An empty answer is a failed caption, but it scores as what it is: an empty prediction
                # (dropping it would raise the model's score).
                predicted = {r.path: r.caption for r in journal.records.values()
                             if (r.status == "ok" or r.error_kind == "empty") and Path(r.path) in refs}
                scores[label] = score_captions({p: refs[Path(p)] for p in predicted}, predicted).as_dict()
                yield ev.Step(step=label, title=f"Captioning with the {label} model", status="finished")
            atomic_write_text(out_dir / "metrics.json", json.dumps(scores, indent=2))
            yield ev.FileWritten(path=str(out_dir / "metrics.json"), description="caption metrics")
        yield _scores_table(scores)
        summary = "; ".join(f"{label}: BLEU-4 {s['bleu4']:.3f}, CIDEr {_fmt(s['cider'])}" for label, s in scores.items())
        yield ev.Done(result={"scores": scores}, summary=summary)


# -- helpers --------------------------------------------------------------------------------------
def _captioner(engine: Any, prompt: str, max_new_tokens: int, ctx: Context):
    from localqwen_captioner.engine_captions import engine_captioner

    return engine_captioner(engine, prompt, max_new_tokens=max_new_tokens, cancel=ctx.cancel)


def _preview(path: Path, key: str, folder: Path) -> str:
    """A gallery copy inside LocalQwen's outputs (the web view serves nothing else); else the original."""
    from localqwen_captioner.images import ImageLoadError, write_preview

    stem, dot, suffix = key.rpartition(".")
    if not dot or "/" in suffix:
        stem, suffix = key, ""
    # photo.jpg -> photo.jpg, photo.png -> photo_png.jpg (two images of one name stay apart)
    if suffix.lower() not in ("", "jpg", "jpeg"):
        stem += f"_{suffix}"
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)
    try:
        return str(write_preview(path, folder / f"{name}.jpg"))
    except (ImageLoadError, OSError):
        return str(path)


def _model_label(engine: Any, requested: str) -> str:
    return str(getattr(engine, "model_id", "") or requested or "default")


def _folder_id(source: Path, adapter: Path | None = None) -> str:
    """A stable folder name per source (and adapter), so re-running resumes in the same place."""
    resolved = Path(source).expanduser().resolve()
    digest = hashlib.sha1(f"{resolved}|{adapter or ''}".encode()).hexdigest()[:8]
    return f"{resolved.stem or 'root'}-{digest}"


def _default_output_dir(ctx: Context, source: Path) -> Path:
    return ctx.outputs_dir / "captions" / _folder_id(source)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _scores_table(scores: dict[str, dict[str, Any]]) -> ev.Table:
    rows = [[label, _fmt(s["bleu4"]), _fmt(s["rouge_l"]), _fmt(s["cider"]), s["images"]] for label, s in scores.items()]
    return ev.Table(title="Caption metrics", columns=["captions", "BLEU-4", "ROUGE-L", "CIDEr", "images"], rows=rows)


def _read_predictions(path: Path) -> dict[str, str]:
    """Captions by resolved image path from a caption run's captions.jsonl or captions.csv."""
    import csv

    if not path.is_file():
        raise FileNotFoundError(f"no such captions file: {path}")
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            rows: list[dict[str, Any]] = list(csv.DictReader(handle))
    else:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if rows and not {"path", "caption"} <= set(rows[0]):
        raise ValueError(f"{path.name}: not a captions file from a caption run (needs path and caption)")
    return {str(Path(r["path"]).resolve()): r["caption"] for r in rows if r.get("status", "ok") == "ok"}


def _write_rows_csv(path: Path, columns: list[str], rows: list[list[Any]]) -> None:
    import csv

    from localqwen.atomic import atomic_open

    with atomic_open(path, "w") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
