"""Captioning many images: results journal, resume, sidecar .txt files, progress and cancel.

Results go to ``captions.jsonl`` as each batch finishes (appended, flushed and fsynced, so a
crash loses at most the batch in flight) and to ``captions.csv``, rewritten atomically from the
journal every few seconds and at the end. Re-running into the same folder skips images already
captioned with the same model, adapter and prompt; images that failed are tried again.

One run at a time per output folder: a run holds ``.captions.lock`` there while it writes, so a
second run started on the same folder waits for the first, then reads its results and resumes
(before, both captioned everything and the journal held every image twice).
"""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.atomic import atomic_open, atomic_write_text
from localqwen.plugin_api import events as ev
from localqwen.storage.file_lock import FileLock
from localqwen_captioner.images import ImageLoadError, LoadedImage, load_image

if TYPE_CHECKING:
    from localqwen.plugin_api import CancelToken

JOURNAL_NAME = "captions.jsonl"
CSV_NAME = "captions.csv"
LOCK_NAME = ".captions.lock"
# Spreadsheets run a cell that starts with one of these as a formula (CSV / formula injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

# Turns a batch of loaded images into one caption each (the engine, in practice).
CaptionFunc = Callable[[Sequence[LoadedImage]], list[str]]


@dataclass
class CaptionRecord:
    image: str  # path relative to the captioned folder: the resume key
    path: str
    status: str  # "ok" | "error"
    caption: str = ""
    error: str = ""
    error_kind: str = ""
    warning: str = ""
    model: str = ""
    adapter: str = ""
    prompt: str = ""
    created: str = ""

    def same_settings(self, model: str, adapter: str, prompt: str) -> bool:
        return (self.model, self.adapter, self.prompt) == (model, adapter, prompt)


COLUMNS = [f.name for f in fields(CaptionRecord)]


class CaptionJournal:
    """The output folder of one captioning run (or several resumed ones)."""

    def __init__(self, out_dir: Path, *, csv_interval_s: float = 5.0) -> None:
        self.out_dir = Path(out_dir)
        self.jsonl_path = self.out_dir / JOURNAL_NAME
        self.csv_path = self.out_dir / CSV_NAME
        self.csv_interval_s = csv_interval_s
        self.lock = FileLock(self.out_dir / LOCK_NAME)
        self._last_csv = 0.0
        self.reload()

    def reload(self) -> None:
        """Read the journal again (after waiting for another run on this folder to finish)."""
        self.records: dict[str, CaptionRecord] = self._read()
        # A crash mid-append leaves a last line without its newline; start ours on a fresh line.
        self._torn_tail = _ends_without_newline(self.jsonl_path)

    def _read(self) -> dict[str, CaptionRecord]:
        records: dict[str, CaptionRecord] = {}
        if not self.jsonl_path.exists():
            return records
        known = set(COLUMNS)
        with self.jsonl_path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    raw = json.loads(line)
                    record = CaptionRecord(**{k: v for k, v in raw.items() if k in known})
                except (json.JSONDecodeError, TypeError):
                    continue  # a line torn by a crash mid-write: that image is simply redone
                records[record.image] = record  # later lines win: a retry replaces an old error
        return records

    def is_done(self, image: str, model: str, adapter: str, prompt: str) -> bool:
        record = self.records.get(image)
        return record is not None and record.status == "ok" and record.same_settings(model, adapter, prompt)

    def append(self, records: Sequence[CaptionRecord]) -> None:
        if not records:
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in records)
        if self._torn_tail:
            text, self._torn_tail = "\n" + text, False
        with self.jsonl_path.open("a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        for record in records:
            self.records[record.image] = record
        if time.monotonic() - self._last_csv >= self.csv_interval_s:
            self.write_csv()

    def write_csv(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with atomic_open(self.csv_path, "w", encoding="utf-8") as handle:
            # newline="" semantics: csv writes \r\n itself, so keep the handle's default "\n".
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(COLUMNS)
            for record in sorted(self.records.values(), key=lambda r: r.image):
                writer.writerow([csv_cell(getattr(record, name)) for name in COLUMNS])
        self._last_csv = time.monotonic()


class EmptyCaptionError(RuntimeError):
    """The model answered with nothing (or only whitespace) for an image."""


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula (an image named ``=HYPERLINK(...).jpg``)
    gets a leading apostrophe, the OWASP-recommended escape; the JSONL keeps the exact text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _ends_without_newline(path: Path) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"


def image_key(path: Path, root: Path) -> str:
    """The stable name of an image inside the captioned folder (its relative POSIX path)."""
    try:
        return path.relative_to(root).as_posix() if root.is_dir() else path.name
    except ValueError:
        return path.as_posix()


@dataclass
class BatchOptions:
    model: str = ""
    adapter: str = ""
    prompt: str = ""
    batch_size: int = 4
    max_side: int | None = 768
    write_txt: bool = False
    overwrite_txt: bool = False
    resume: bool = True


@dataclass
class BatchSummary:
    captioned: int = 0
    errors: int = 0
    skipped: int = 0
    txt_written: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def caption_images(
    images: Sequence[Path],
    root: Path,
    caption: CaptionFunc,
    journal: CaptionJournal,
    options: BatchOptions,
    cancel: CancelToken | None = None,
    summary: BatchSummary | None = None,
) -> Iterator[Any]:
    """Caption ``images`` in batches, yielding progress, per-file warnings and caption text.

    ``summary`` (if given) is filled in as work goes, so a caller still has the counts after a cancel.
    """
    summary = summary if summary is not None else BatchSummary()
    if not journal.lock.acquire(blocking=False):
        holder = journal.lock.holder()
        yield ev.Log(message=f"another captioning run{f' ({holder})' if holder else ''} is writing to "
                             f"{journal.out_dir}; waiting for it to finish, then resuming after it")
        if not journal.lock.acquire(cancelled=lambda: cancel is not None and cancel.cancelled):
            assert cancel is not None
            cancel.raise_if_cancelled()
    try:
        journal.reload()  # what a run that finished while we waited (or before) wrote
        yield from _caption_locked(images, root, caption, journal, options, cancel, summary)
    finally:
        journal.lock.release()


def _caption_locked(images: Sequence[Path], root: Path, caption: CaptionFunc, journal: CaptionJournal,
                    options: BatchOptions, cancel: CancelToken | None, summary: BatchSummary) -> Iterator[Any]:
    todo = []
    for path in images:
        key = image_key(path, root)
        if options.resume and journal.is_done(key, options.model, options.adapter, options.prompt):
            summary.skipped += 1
        else:
            todo.append((key, path))
    if summary.skipped:
        yield ev.Log(message=f"resuming: {summary.skipped} images already captioned in {journal.out_dir}")
    tracker = ev.ProgressTracker(len(todo), unit="image", task="caption", message="captioning")
    yield tracker.update(0)
    try:
        for start in range(0, len(todo), max(1, options.batch_size)):
            if cancel is not None:
                cancel.raise_if_cancelled()
            chunk = todo[start:start + options.batch_size]
            records, events = _caption_chunk(chunk, caption, options, summary)
            journal.append(records)
            yield from events
            message = f"{summary.captioned} captioned, {summary.errors} failed"
            yield tracker.advance(len(chunk), message=message)
    finally:
        journal.write_csv()


def _caption_chunk(chunk: Sequence[tuple[str, Path]], caption: CaptionFunc, options: BatchOptions,
                   summary: BatchSummary) -> tuple[list[CaptionRecord], list[Any]]:
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    base = {"model": options.model, "adapter": options.adapter, "prompt": options.prompt, "created": now}
    records: list[CaptionRecord] = []
    events: list[Any] = []
    loaded: list[tuple[str, LoadedImage]] = []
    for key, path in chunk:
        try:
            loaded.append((key, load_image(path, max_side=options.max_side)))
        except ImageLoadError as exc:
            records.append(CaptionRecord(image=key, path=str(path), status="error", error=str(exc),
                                         error_kind=exc.reason, **base))
            events.append(ev.Warning(message=f"skipped {key}: {exc}"))
    texts = _caption_isolating_failures(caption, [item for _, item in loaded])
    for (key, item), text in zip(loaded, texts, strict=True):
        if not isinstance(text, Exception) and not text.strip():
            text = EmptyCaptionError("the model returned an empty caption")  # a failure: resume retries it
        if isinstance(text, Exception):
            kind = "empty" if isinstance(text, EmptyCaptionError) else "model"
            records.append(CaptionRecord(image=key, path=str(item.path), status="error",
                                         error=f"{key}: captioning failed: {text}", error_kind=kind, **base))
            events.append(ev.Warning(message=f"failed {key}: {text}"))
            continue
        notes = list(item.warnings)
        if options.write_txt:
            note = _write_sidecar(item.path, text, options.overwrite_txt)
            if note:
                notes.append(note)
            else:
                summary.txt_written += 1
        records.append(CaptionRecord(image=key, path=str(item.path), status="ok", caption=text,
                                     warning="; ".join(notes), **base))
        events.append(ev.TextDelta(text=f"{key}: {text}\n"))
    summary.captioned += sum(r.status == "ok" for r in records)
    summary.errors += sum(r.status == "error" for r in records)
    order = {key: index for index, (key, _) in enumerate(chunk)}
    records.sort(key=lambda r: order[r.image])
    return records, events


def _caption_isolating_failures(caption: CaptionFunc, images: list[LoadedImage]) -> list[str | Exception]:
    """Caption as one batch; if the batch fails, retry one by one so one bad image fails alone."""
    if not images:
        return []
    try:
        texts = caption(images)
        if len(texts) != len(images):
            raise RuntimeError(f"expected {len(images)} captions, got {len(texts)}")
        return list(texts)
    except Exception as batch_error:
        if len(images) == 1:
            return [batch_error]
    results: list[str | Exception] = []
    for item in images:
        try:
            results.append(caption([item])[0])
        except Exception as exc:
            results.append(exc)
    return results


def _write_sidecar(image_path: Path, text: str, overwrite: bool) -> str:
    """Write ``image.txt`` beside the image. Returns a warning, or "" when written."""
    target = image_path.with_suffix(".txt")
    if target.exists() and not overwrite:
        return f"kept the existing {target.name} (overwrite .txt is off)"
    try:
        atomic_write_text(target, text.strip() + "\n")
    except OSError as exc:
        return f"could not write {target.name}: {exc.strerror or exc}"
    return ""
