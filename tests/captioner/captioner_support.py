"""Shared helpers for the captioner tests (real data, read in place)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Real COCO images and captions, read in place from the shared data folder, never copied.
COCO_MINI = (Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "coco_mini").resolve()
# A checkout without the shared data folder beside it (a clone elsewhere) skips what needs it, as the
# medical and memory tests do, instead of failing on a missing file.
needs_coco = pytest.mark.skipif(not COCO_MINI.is_dir(), reason=f"{COCO_MINI} is not on this machine")


def hub_rows(limit: int = 12, *, as_bytes: bool = False):
    """Rows shaped like ``MsDataset.load('modelscope/coco_2014_caption', ...)`` yields.

    This is the fake hub: ModelScope cannot be reached from the test machine, so its rows are
    built from real COCO train images (``image_id``, ``caption``, ``image`` as a PIL image or
    as the undecoded ``{"bytes": ...}`` form).
    """
    from PIL import Image

    data = json.loads((COCO_MINI / "annotations" / "captions_train2017.json").read_text())
    files = {image["id"]: image["file_name"] for image in data["images"]}
    for note in data["annotations"][:limit]:
        path = COCO_MINI / "train2017" / files[note["image_id"]]
        image = {"bytes": path.read_bytes(), "path": None} if as_bytes else Image.open(path)
        yield {"image_id": note["image_id"], "caption": note["caption"], "image": image}
