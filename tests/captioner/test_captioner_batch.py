"""Batch bookkeeping: journal + CSV, resume, per-file errors, .txt sidecars, cancel.

The captioner here is a small deterministic function (the image's dominant colour), so these
tests check the bookkeeping exactly; the model path is tested in test_captioner_plugin.py.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from captioner_support import COCO_MINI, needs_coco
from localqwen_captioner.batch import BatchOptions, BatchSummary, CaptionJournal, caption_images
from localqwen_captioner.images import find_images

from localqwen.plugin_api import Cancelled, CancelToken
from localqwen.plugin_api import events as ev


def colour_captions(images):
    names = {0: "red", 1: "green", 2: "blue"}
    out = []
    for item in images:
        means = [sum(band.getdata()) / (item.image.width * item.image.height) for band in item.image.split()]
        out.append(f"a mostly {names[means.index(max(means))]} picture")
    return out


def _folder_with_problems(root: Path) -> Path:
    from PIL import Image

    (root / "sub").mkdir(parents=True)
    Image.new("RGB", (32, 32), (250, 10, 10)).save(root / "red.png")
    Image.new("RGB", (32, 32), (10, 10, 250)).save(root / "sub" / "blue.jpg")
    Image.new("CMYK", (32, 32), (255, 0, 255, 0)).save(root / "sub" / "green_cmyk.jpg")
    (root / "fake.jpg").write_text("not an image")
    buffer = io.BytesIO()
    Image.effect_noise((128, 128), 50).convert("RGB").save(buffer, "JPEG")
    (root / "cut.jpg").write_bytes(buffer.getvalue()[:300])
    return root


def _run(images, root, journal, options, cancel=None):
    summary = BatchSummary()
    events = list(caption_images(images, root, colour_captions, journal, options, cancel, summary))
    return events, summary


def test_folder_with_broken_files_goes_on_and_records_each_error(tmp_path):
    root = _folder_with_problems(tmp_path / "photos")
    journal = CaptionJournal(tmp_path / "out")
    options = BatchOptions(model="colour", prompt="p", batch_size=2, write_txt=True)
    events, summary = _run(find_images(root), root, journal, options)
    assert (summary.captioned, summary.errors, summary.txt_written) == (3, 2, 3)
    by_image = {r.image: r for r in journal.records.values()}
    assert by_image["red.png"].caption == "a mostly red picture"
    assert by_image["sub/blue.jpg"].caption == "a mostly blue picture"
    assert by_image["sub/green_cmyk.jpg"].caption == "a mostly green picture"
    assert by_image["fake.jpg"].error_kind == "not_an_image" and by_image["cut.jpg"].error_kind == "truncated"
    assert (root / "sub" / "blue.txt").read_text() == "a mostly blue picture\n"
    assert not (root / "fake.txt").exists()
    warnings = [e.message for e in events if isinstance(e, ev.Warning)]
    assert len(warnings) == 2 and any("fake.jpg" in w and "not a recognised image" in w for w in warnings)
    progress = [e for e in events if isinstance(e, ev.Progress)]
    assert progress[-1].done == 5 and progress[-1].total == 5 and progress[-1].rate and progress[-1].eta_s == 0
    with journal.csv_path.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["image"] for r in rows] == sorted(by_image)
    assert {r["status"] for r in rows} == {"ok", "error"}


def test_resume_skips_done_images_retries_errors_and_survives_a_torn_line(tmp_path):
    root = _folder_with_problems(tmp_path / "photos")
    out = tmp_path / "out"
    options = BatchOptions(model="colour", prompt="p", batch_size=2)
    _run(find_images(root), root, CaptionJournal(out), options)
    lines_before = (out / "captions.jsonl").read_text().splitlines()
    with (out / "captions.jsonl").open("a") as handle:
        handle.write('{"image": "red.png", "status": "ok", "capt')  # a crash mid-write
    events, summary = _run(find_images(root), root, CaptionJournal(out), options)
    assert summary.skipped == 3 and summary.captioned == 0 and summary.errors == 2  # errors retried
    assert any(isinstance(e, ev.Log) and "3 images already captioned" in e.message for e in events)
    # A different prompt is a different job: everything is captioned again.
    _, again = _run(find_images(root), root, CaptionJournal(out), BatchOptions(model="colour", prompt="other"))
    assert again.skipped == 0 and again.captioned == 3
    journal = CaptionJournal(out)
    assert journal.records["red.png"].prompt == "other"
    assert len((out / "captions.jsonl").read_text().splitlines()) == len(lines_before) + 1 + 2 + 5


def test_existing_txt_is_kept_unless_overwrite(tmp_path):
    root = _folder_with_problems(tmp_path / "photos")
    (root / "red.txt").write_text("my own caption\n")
    journal = CaptionJournal(tmp_path / "out")
    _, summary = _run(find_images(root), root, journal, BatchOptions(write_txt=True))
    assert (root / "red.txt").read_text() == "my own caption\n"
    assert "kept the existing red.txt" in journal.records["red.png"].warning and summary.txt_written == 2
    _run(find_images(root), root, journal, BatchOptions(write_txt=True, overwrite_txt=True, resume=False))
    assert (root / "red.txt").read_text() == "a mostly red picture\n"


@needs_coco
def test_cancel_keeps_finished_batches_and_writes_the_csv(tmp_path):
    images = sorted((COCO_MINI / "val2017").glob("*.jpg"))[:12]  # read in place, never written to
    journal = CaptionJournal(tmp_path / "out")
    cancel = CancelToken()
    seen = 0
    stream = caption_images(images, COCO_MINI / "val2017", colour_captions, journal,
                            BatchOptions(batch_size=4, max_side=64), cancel)
    with pytest.raises(Cancelled):
        for event in stream:
            if isinstance(event, ev.Progress) and event.done == 4:
                cancel.cancel()
            seen += 1
    rows = [json.loads(line) for line in (tmp_path / "out" / "captions.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    assert len((tmp_path / "out" / "captions.csv").read_text().splitlines()) == 5
    _, summary = _run(images, COCO_MINI / "val2017", CaptionJournal(tmp_path / "out"), BatchOptions(max_side=64))
    assert summary.skipped == 4 and summary.captioned == 8


def test_a_caption_failure_on_one_image_fails_only_that_image(tmp_path):
    from PIL import Image

    root = tmp_path / "photos"
    root.mkdir()
    for index in range(3):
        Image.new("RGB", (16 + index, 16), "red").save(root / f"{index}.png")

    def picky(images):
        if any(item.image.width == 17 for item in images):
            raise RuntimeError("model choked on 1.png")
        return ["ok"] * len(images)

    journal = CaptionJournal(tmp_path / "out")
    list(caption_images(find_images(root), root, picky, journal, BatchOptions(batch_size=3)))
    assert [journal.records[f"{i}.png"].status for i in range(3)] == ["ok", "error", "ok"]
    assert "model choked" in journal.records["1.png"].error
