"""Issue 16, item 6: what the captioner writes is safe to open and honest about failures.

Image files named like spreadsheet formulas go into captions.csv escaped; an empty caption is a
failure (retried on resume), not "ok"; and outputs get normal permissions (the umask's), not the
temp file's 0600.
"""

from __future__ import annotations

import csv
import json
import os
import stat

import pytest
from localqwen_captioner.batch import BatchOptions, CaptionJournal, caption_images
from localqwen_captioner.images import find_images

from localqwen.atomic import atomic_write_bytes, atomic_write_text

HOSTILE_NAMES = ["=HYPERLINK(\"evil.example\",\"y\").png", "+1+2.png", "-2+3.png", "@SUM(A1).png", "plain.png"]


def _images(folder, names):
    from PIL import Image

    folder.mkdir()
    for index, name in enumerate(names):
        Image.new("RGB", (8, 8), (index * 40, 0, 0)).save(folder / name)
    return find_images(folder)


def _run(images, root, out_dir, caption):
    journal = CaptionJournal(out_dir)
    list(caption_images(images, root, caption, journal, BatchOptions(model="m", batch_size=2)))
    return journal


def test_formula_like_file_names_and_captions_are_escaped_in_the_csv(tmp_path):
    source = tmp_path / "images"
    images = _images(source, HOSTILE_NAMES)
    journal = _run(images, source, tmp_path / "out",
                   lambda batch: ["=cmd|' /C calc'!A0" if "plain" in i.path.name else "a red square" for i in batch])
    with journal.csv_path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(HOSTILE_NAMES)
    for row in rows:
        for column in ("image", "path", "caption"):
            assert not row[column].startswith(("=", "+", "-", "@")), (column, row[column])
    by_image = {row["image"]: row for row in rows}
    assert "'=HYPERLINK(\"evil.example\",\"y\").png" in by_image
    assert by_image["plain.png"]["caption"] == "'=cmd|' /C calc'!A0"
    # The JSONL is data, not a spreadsheet: it keeps the exact names and text.
    raw = [json.loads(line) for line in journal.jsonl_path.read_text(encoding="utf-8").splitlines()]
    assert {r["image"] for r in raw} == set(HOSTILE_NAMES)


def test_an_empty_caption_is_recorded_as_failed_and_retried(tmp_path):
    source = tmp_path / "images"
    images = _images(source, ["a.png", "b.png", "c.png"])
    out = tmp_path / "out"
    journal = _run(images, source, out, lambda batch: ["" if i.path.name == "b.png" else "  \n" if i.path.name == "c.png"
                                                        else "a red square" for i in batch])
    status = {key: (r.status, r.error_kind) for key, r in journal.records.items()}
    assert status == {"a.png": ("ok", ""), "b.png": ("error", "empty"), "c.png": ("error", "empty")}
    assert "empty caption" in journal.records["b.png"].error
    again = _run(images, source, out, lambda batch: ["now described" for _ in batch])  # resume retries failures
    assert {key: r.status for key, r in again.records.items()} == {"a.png": "ok", "b.png": "ok", "c.png": "ok"}
    assert again.records["a.png"].caption == "a red square"


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_outputs_get_normal_permissions(tmp_path, umask_022):
    source = tmp_path / "images"
    images = _images(source, ["a.png"])
    journal = _run(images, source, tmp_path / "out", lambda batch: ["a caption" for _ in batch])
    for path in (journal.csv_path, journal.jsonl_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    os.umask(0o027)
    text = tmp_path / "new.txt"
    atomic_write_text(text, "x")
    assert stat.S_IMODE(text.stat().st_mode) == 0o640  # the umask is honoured, not a fixed mode
    kept = tmp_path / "kept.bin"
    kept.write_bytes(b"old")
    kept.chmod(0o664)
    atomic_write_bytes(kept, b"new")
    assert kept.read_bytes() == b"new" and stat.S_IMODE(kept.stat().st_mode) == 0o664  # a replaced file keeps its mode
