"""The COCO pipeline: download -> CSV -> conversation JSON -> references.

The ModelScope hub is the one part this machine cannot reach, so ``download_coco`` is fed rows
in the hub dataset's own layout by ``captioner_support.hub_rows`` (the fake hub), built from
real COCO images in ../shared/data/coco_mini. Everything after the hub is the real code.
"""

from __future__ import annotations

import csv
import json

import pytest
from captioner_support import COCO_MINI, hub_rows, needs_coco
from localqwen_captioner import coco

from localqwen.plugin_api import Cancelled, CancelToken
from localqwen.plugin_api import events as ev


@needs_coco
def test_download_writes_images_and_csv_and_resumes(tmp_path):
    events = list(coco.download_coco(tmp_path / "coco", rows=8, source=hub_rows()))
    done = events[-1]
    assert isinstance(done, ev.Done) and done.result["rows"] == 8
    rows = coco.read_caption_csv(tmp_path / "coco" / "captions.csv")
    assert len(rows) == 8 and all(path.is_file() and path.is_absolute() for path, _ in rows)
    assert rows[0][1] == next(hub_rows(1))["caption"].strip()
    images = sorted((tmp_path / "coco" / "images").iterdir())
    assert len(images) == len({path for path, _ in rows})  # one file per image, however many captions
    stamp = images[0].stat().st_mtime_ns
    list(coco.download_coco(tmp_path / "coco", rows=8, source=hub_rows(as_bytes=True)))
    assert images[0].stat().st_mtime_ns == stamp  # existing images were kept


@needs_coco
def test_download_skips_bad_rows_and_cancel_keeps_the_csv(tmp_path):
    def rows():
        yield {"image_id": 1, "caption": "no image here", "image": None}
        yield from hub_rows(10, as_bytes=True)

    cancel = CancelToken()
    stream = coco.download_coco(tmp_path / "coco", rows=10, source=rows(), cancel=cancel)
    warnings = []
    with pytest.raises(Cancelled):
        for event in stream:
            if isinstance(event, ev.Warning):
                warnings.append(event.message)
            if isinstance(event, ev.Progress) and event.done == 3:
                cancel.cancel()
    assert warnings and "row 0" in warnings[0] and "no usable image" in warnings[0]
    assert len(coco.read_caption_csv(tmp_path / "coco" / "captions.csv")) == 3


@needs_coco
def test_csv_to_conversations_splits_by_image(tmp_path):
    list(coco.download_coco(tmp_path / "coco", rows=40, source=hub_rows(40)))
    csv_path = tmp_path / "coco" / "captions.csv"
    result = coco.csv_to_conversations(csv_path, tmp_path / "json", top_k=30, test_size=0.25)
    train = json.loads(result.train_path.read_text())
    test = json.loads(result.test_path.read_text())
    assert result.train_rows + result.test_rows == 30 == len(train) + len(test)
    first = train[0]["messages"]
    assert first[0]["role"] == "user" and first[0]["content"][0]["type"] == "image"
    assert first[0]["content"][1] == {"type": "text", "text": "COCO Yes:"}
    assert first[1]["role"] == "assistant" and first[1]["content"]

    def images(rows):
        return {row["messages"][0]["content"][0]["image"] for row in rows}

    assert not images(train) & images(test)
    all_images = images(train) | images(test)
    assert len(images(test)) == round(len(all_images) * 0.25)
    # Same seed, same split; a test split given as a count of images.
    again = coco.csv_to_conversations(csv_path, tmp_path / "json2", top_k=30, test_size=0.25)
    assert json.loads(again.test_path.read_text()) == test
    counted = coco.csv_to_conversations(csv_path, tmp_path / "json3", test_size=2, prompt="Describe.")
    assert len(images(json.loads(counted.test_path.read_text()))) == 2
    assert coco.conversation_prompt(counted.train_path) == "Describe."
    # References read back from the test JSON are the captions it holds.
    refs = coco.read_references(result.test_path)
    assert sum(len(v) for v in refs.values()) == len(test)


def test_csv_errors_are_specific(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("path,text\na.jpg,hello\n")
    with pytest.raises(ValueError, match="needs the columns image_path and caption"):
        coco.read_caption_csv(bad)
    missing = tmp_path / "missing.csv"
    with missing.open("w", newline="") as handle:
        csv.writer(handle).writerows([["image_path", "caption"], ["nowhere.jpg", "a cat"]])
    with pytest.raises(FileNotFoundError, match="1 images listed in missing.csv do not exist"):
        coco.csv_to_conversations(missing, tmp_path)
    empty_caption = tmp_path / "empty.csv"
    empty_caption.write_text("image_path,caption\na.jpg,\n")
    with pytest.raises(ValueError, match="empty.csv:2"):
        coco.read_caption_csv(empty_caption)


@needs_coco
def test_read_references_from_coco_annotations_in_place():
    refs = coco.read_references(COCO_MINI / "annotations_full" / "captions_val2017.json",
                                images_dir=COCO_MINI / "val2017")
    assert len(refs) == 159 and all(len(captions) >= 5 for captions in refs.values())
    # The default image folder is the split's folder beside "annotations".
    small = coco.read_references(COCO_MINI / "annotations" / "captions_val2017.json")
    assert len(small) == 79 and set(small) <= set(refs)


@needs_coco
def test_trainer_accepts_the_conversation_json(tmp_path):
    from localqwen.training.data import read_rows, validate_rows

    list(coco.download_coco(tmp_path / "coco", rows=10, source=hub_rows(10)))
    result = coco.csv_to_conversations(tmp_path / "coco" / "captions.csv", tmp_path / "json", test_size=2)
    for path in (result.train_path, result.test_path):
        report = validate_rows(read_rows(path), "sft")
        assert report.ok and len(report.valid) == len(json.loads(path.read_text())), report.summary()


def test_references_from_the_trainers_shapes_jsonl_resolve_relative_images(tmp_path):
    from localqwen.training.synthetic_shapes import build_shapes_dataset

    build_shapes_dataset(tmp_path / "shapes", n_train=3, n_eval=4)
    refs = coco.read_references(tmp_path / "shapes" / "eval.jsonl")
    assert len(refs) == 4 and all(path.is_file() for path in refs)
    assert all(captions[0].startswith("a ") and "background" in captions[0] for captions in refs.values())
    assert coco.conversation_prompt(tmp_path / "shapes" / "eval.jsonl") == "Describe the image."
