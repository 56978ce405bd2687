"""The COCO 2014 caption pipeline: download rows from ModelScope, write images + CSV, convert the
CSV to Qwen3-VL conversation JSON for the trainer, and read reference captions for metrics.

CSV layout (what the seed project's ``download_data2csv.py`` wrote): columns ``image_path`` and
``caption``, one caption per row; an image with several captions has several rows. Relative
image paths are resolved against the CSV's folder.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.atomic import atomic_open, atomic_write_text
from localqwen.plugin_api import events as ev

if TYPE_CHECKING:
    from localqwen.plugin_api import CancelToken

HUB_DATASET = "modelscope/coco_2014_caption"
HUB_SUBSET = "coco_2014_caption"
COCO_PROMPT = "COCO Yes:"  # the seed project's training prompt; the "coco" preset uses it too
CSV_COLUMNS = ("image_path", "caption")


# ---------------------------------------------------------------------------------------------
# Download
# ---------------------------------------------------------------------------------------------
def load_hub_rows(split: str) -> Iterable[dict[str, Any]]:
    """Rows of ``modelscope/coco_2014_caption`` streamed from the ModelScope hub.

    Streaming fetches only the rows we read, not the whole 80k-image split. Each row has
    ``image_id``, ``caption`` and ``image`` (a PIL image, or bytes / a path in some versions).
    """
    try:
        from modelscope.msdatasets import MsDataset
    except ImportError as exc:  # an optional extra
        raise RuntimeError("downloading COCO needs ModelScope: pip install 'localqwen[modelscope]'") from exc
    return MsDataset.load(HUB_DATASET, subset_name=HUB_SUBSET, split=split, use_streaming=True)


def download_coco(out_dir: Path, rows: int, *, split: str = "train", source: Iterable[dict[str, Any]] | None = None,
                  cancel: CancelToken | None = None) -> Iterator[Any]:
    """Save the first ``rows`` rows as ``out_dir/images/<image_id>.jpg`` plus ``out_dir/captions.csv``.

    ``source`` defaults to the hub stream. Images already on disk are kept (a re-run resumes).
    The CSV is written atomically, also when cancelled, with the rows done so far.
    """
    out_dir = Path(out_dir)
    image_dir = out_dir / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "captions.csv"
    written: list[tuple[str, str]] = []
    skipped = 0
    tracker = ev.ProgressTracker(rows, unit="row", task="download", message="downloading COCO captions")
    yield tracker.update(0)
    try:
        stream = source if source is not None else load_hub_rows(split)
        for index, row in enumerate(stream):
            if index >= rows:
                break
            if cancel is not None:
                cancel.raise_if_cancelled()
            try:
                path = _save_row_image(row, image_dir)
                caption = str(row["caption"]).strip()
            except (KeyError, ValueError, OSError) as exc:
                skipped += 1
                yield ev.Warning(message=f"row {index}: skipped ({exc})")
                continue
            written.append((str(path.resolve()), caption))
            yield tracker.advance(message=f"{len(written)} rows, {skipped} skipped")
    finally:
        write_caption_csv(csv_path, written)
    yield ev.FileWritten(path=str(csv_path), description=f"{len(written)} captions")
    yield ev.Done(result={"csv": str(csv_path), "images_dir": str(image_dir), "rows": len(written),
                          "skipped": skipped}, summary=f"{len(written)} rows written to {csv_path}")


def _save_row_image(row: dict[str, Any], image_dir: Path) -> Path:
    from PIL import Image

    name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(row["image_id"])).strip("._") or "image"
    target = image_dir / f"{name}.jpg"
    if target.exists() and target.stat().st_size > 0:
        return target
    image = row["image"]
    if isinstance(image, dict):  # the datasets Image feature undecoded: {"bytes": ..., "path": ...}
        image = image.get("bytes") or image.get("path")
    if isinstance(image, bytes):
        import io

        image = Image.open(io.BytesIO(image))
    elif isinstance(image, (str, Path)):
        image = Image.open(image)
    if not isinstance(image, Image.Image):
        raise ValueError(f"no usable image in the row (got {type(image).__name__})")
    with atomic_open(target, "wb", encoding=None) as handle:
        image.convert("RGB").save(handle, "JPEG", quality=95)
    return target


def write_caption_csv(path: Path, rows: Iterable[tuple[str, str]]) -> None:
    with atomic_open(path, "w", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        writer.writerows(rows)


def read_caption_csv(path: Path) -> list[tuple[Path, str]]:
    """``(image path, caption)`` rows of a caption CSV, with clear errors for a wrong file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such CSV file: {path}")
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = set(reader.fieldnames or [])
        if not {"image_path", "caption"} <= columns:
            raise ValueError(f"{path.name}: needs the columns image_path and caption "
                             f"(found: {', '.join(sorted(columns)) or 'none'})")
        rows = []
        for line, row in enumerate(reader, start=2):
            image, caption = (row.get("image_path") or "").strip(), (row.get("caption") or "").strip()
            if not image or not caption:
                raise ValueError(f"{path.name}:{line}: empty image_path or caption")
            image_path = Path(image).expanduser()
            rows.append((image_path if image_path.is_absolute() else path.parent / image_path, caption))
    return rows


# ---------------------------------------------------------------------------------------------
# CSV -> conversation JSON (the trainer's SFT rows)
# ---------------------------------------------------------------------------------------------
def sft_row(image: Path | str, prompt: str, caption: str) -> dict[str, Any]:
    """One SFT row in the contract's chat format: user (image + prompt) -> assistant caption."""
    return {
        "messages": [
            {"role": "user", "content": [{"type": "image", "image": str(image)}, {"type": "text", "text": prompt}]},
            {"role": "assistant", "content": caption},
        ]
    }


@dataclass(frozen=True)
class ConversionResult:
    train_path: Path
    test_path: Path | None
    train_rows: int
    test_rows: int
    missing_images: int


def csv_to_conversations(csv_path: Path, out_dir: Path, *, top_k: int | None = None, test_size: float = 0.1,
                         prompt: str = COCO_PROMPT, seed: int = 42, shuffle: bool = True,
                         require_images: bool = True) -> ConversionResult:
    """Write ``<stem>_train.json`` (and ``<stem>_test.json``) from a caption CSV.

    ``top_k`` keeps the first k rows (as the seed's ``csv2json --top_k``). The split is by image,
    never by row, so no image has captions on both sides. ``test_size`` below 1 is a fraction
    of the images, from 1 up a number of images.
    """
    csv_path = Path(csv_path)
    rows = read_caption_csv(csv_path)
    if top_k is not None:
        rows = rows[:top_k]
    missing = [image for image, _ in rows if not image.is_file()]
    if missing and require_images:
        raise FileNotFoundError(f"{len(missing)} images listed in {csv_path.name} do not exist "
                                f"(first: {missing[0]})")
    missing_set = set(missing)
    rows = [(image, caption) for image, caption in rows if image not in missing_set]
    if not rows:
        raise ValueError(f"{csv_path.name}: no rows to convert")
    images = list(dict.fromkeys(image for image, _ in rows))
    if shuffle:
        random.Random(seed).shuffle(images)
    test_count = round(len(images) * test_size) if test_size < 1 else int(test_size)
    test_count = min(test_count, len(images) - 1)  # always keep something to train on
    test_images = set(images[:test_count]) if test_count > 0 else set()
    train = [sft_row(image.resolve(), prompt, caption) for image, caption in rows if image not in test_images]
    test = [sft_row(image.resolve(), prompt, caption) for image, caption in rows if image in test_images]
    out_dir = Path(out_dir)
    train_path = out_dir / f"{csv_path.stem}_train.json"
    atomic_write_text(train_path, json.dumps(train, ensure_ascii=False, indent=1))
    test_path = None
    if test:
        test_path = out_dir / f"{csv_path.stem}_test.json"
        atomic_write_text(test_path, json.dumps(test, ensure_ascii=False, indent=1))
    return ConversionResult(train_path, test_path, len(train), len(test), len(missing))


# ---------------------------------------------------------------------------------------------
# References for metrics
# ---------------------------------------------------------------------------------------------
def read_references(path: Path, images_dir: Path | None = None) -> dict[Path, list[str]]:
    """Reference captions per image (resolved path) from any of the three layouts we use.

    - COCO annotation JSON (``{"images": [...], "annotations": [...]}``), images in ``images_dir``
      (default: the folder named after the split beside the annotations folder, e.g.
      ``annotations/captions_val2017.json`` -> ``val2017/``); images not on disk are left out.
    - Conversation JSON / JSONL from :func:`csv_to_conversations` (the assistant reply is the reference).
    - Caption CSV (``image_path``, ``caption``).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such references file: {path}")
    if path.suffix.lower() == ".csv":
        refs: dict[Path, list[str]] = {}
        for image, caption in read_caption_csv(path):
            refs.setdefault(image.resolve(), []).append(caption)
        return refs
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name}: neither JSON nor JSON lines ({exc})") from None
    if isinstance(data, dict) and "annotations" in data and "images" in data:
        return _coco_references(data, path, images_dir)
    if isinstance(data, list):
        return _conversation_references(data, path)
    raise ValueError(f"{path.name}: not COCO annotations, conversation rows or a caption CSV")


def _coco_references(data: dict[str, Any], path: Path, images_dir: Path | None) -> dict[Path, list[str]]:
    if images_dir is None:
        split = path.stem.split("_", 1)[-1]  # captions_val2017 -> val2017
        images_dir = path.parent.parent / split
    if not Path(images_dir).is_dir():
        raise FileNotFoundError(f"image folder not found: {images_dir} (set the images folder)")
    files = {image["id"]: Path(images_dir) / image["file_name"] for image in data["images"]}
    refs: dict[Path, list[str]] = {}
    for note in data["annotations"]:
        image = files.get(note["image_id"])
        if image is not None and image.is_file():
            refs.setdefault(image.resolve(), []).append(str(note["caption"]).strip())
    if not refs:
        raise ValueError(f"{path.name}: none of its images are in {images_dir}")
    return refs


def _conversation_references(rows: list[Any], path: Path) -> dict[Path, list[str]]:
    refs: dict[Path, list[str]] = {}
    for index, row in enumerate(rows):
        try:
            messages = row["messages"]
            image = next(part["image"] for message in messages if message["role"] == "user"
                         and isinstance(message["content"], list)
                         for part in message["content"] if part.get("type") == "image")
            answer = next(m["content"] for m in messages if m["role"] == "assistant")
        except (KeyError, TypeError, StopIteration):
            raise ValueError(f"{path.name}: row {index} is not an image + caption conversation") from None
        image_path = Path(image).expanduser()
        if not image_path.is_absolute():  # relative to the file, as the trainer reads it
            image_path = path.parent / image_path
        refs.setdefault(image_path.resolve(), []).append(str(answer).strip())
    return refs


def conversation_prompt(path: Path) -> str | None:
    """The user prompt the conversation JSON was built with, to caption its test split the same way."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        try:
            first = json.loads(text)[0]
        except json.JSONDecodeError:  # JSON lines
            first = json.loads(text.splitlines()[0])
        parts = first["messages"][0]["content"]
        return next(part["text"] for part in parts if part.get("type") == "text")
    except (ValueError, KeyError, IndexError, TypeError, StopIteration):
        return None
