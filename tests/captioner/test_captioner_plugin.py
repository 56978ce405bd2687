"""The captioner's model actions end to end: the real workbench, the real engine, a tiny Qwen3-VL.

Images are drawn (coloured shapes), broken on purpose, or real COCO images read in place.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from captioner_support import COCO_MINI, needs_coco

from localqwen.app import Workbench
from localqwen.plugin_api import CancelToken
from localqwen.plugin_api import events as ev

COCO_REFS = COCO_MINI / "annotations" / "captions_val2017.json"


@pytest.fixture
def bench():
    return Workbench.create()


@pytest.fixture(scope="module")
def adapter_dir(tiny_qwen3_vl_path, tmp_path_factory) -> Path:
    """A LoRA adapter with random (non-zero) weights, so its captions differ from the base model's."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(1)
    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_vl_path)
    config = LoraConfig(r=8, lora_alpha=64, target_modules=["q_proj", "v_proj", "o_proj"], init_lora_weights=False)
    peft_model = get_peft_model(model, config)
    folder = tmp_path_factory.mktemp("adapter")
    peft_model.save_pretrained(folder)
    return folder


def _shapes_folder(root: Path) -> Path:
    import random

    from PIL import Image

    from localqwen.training.synthetic_shapes import ShapeScene, draw

    rng = random.Random(0)
    (root / "nested").mkdir(parents=True)
    draw(ShapeScene("red", "circle", "white"), 96, rng).save(root / "red_circle.png")
    draw(ShapeScene("blue", "square", "black"), 96, rng).save(root / "blue_square.jpg")
    draw(ShapeScene("green", "triangle", "gray"), 96, rng).convert("CMYK").save(root / "nested" / "green.jpg")
    draw(ShapeScene("yellow", "circle", "black"), 96, rng).save(root / "nested" / "yellow.webp")
    buffer = io.BytesIO()
    Image.new("RGB", (96, 96), "white").save(buffer, "PNG")
    (root / "nested" / "broken.png").write_bytes(buffer.getvalue()[:60])
    return root


def _caption(bench, **values):
    values.setdefault("max_new_tokens", 8)
    return list(bench.run("captioner", "caption", values))


def test_caption_folder_with_progress_errors_txt_and_resume(bench, tiny_qwen3_vl_path, adapter_dir, tmp_path):
    # The random adapter with 16 new tokens makes the tiny model say something for every image (the
    # bare tiny model answers with nothing, which is recorded as a failed caption).
    root = _shapes_folder(tmp_path / "photos")
    model = {"model": str(tiny_qwen3_vl_path), "adapter": str(adapter_dir), "max_new_tokens": 16}
    events = _caption(bench, source=str(root), batch_size=2, write_txt=True, **model)
    done = events[-1]
    assert done.status == "ok", done.summary
    assert (done.result["captioned"], done.result["errors"], done.result["txt_written"]) == (4, 1, 4)
    progress = [e for e in events if isinstance(e, ev.Progress)]
    assert progress[-1].done == 5 and progress[-1].unit == "image" and progress[-1].rate > 0
    assert any(isinstance(e, ev.Warning) and "broken.png" in e.message for e in events)
    gallery = [e for e in events if isinstance(e, ev.Image)]
    assert len(gallery) == 4 and all(Path(e.path).is_relative_to(bench.paths.outputs_dir) for e in gallery)
    with open(done.result["csv"], encoding="utf-8") as handle:
        rows = {row["image"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"red_circle.png", "blue_square.jpg", "nested/green.jpg", "nested/yellow.webp",
                         "nested/broken.png"}
    assert rows["nested/broken.png"]["status"] == "error" and rows["nested/green.jpg"]["status"] == "ok"
    assert (root / "nested" / "green.txt").read_text().strip() == rows["nested/green.jpg"]["caption"].strip()
    assert rows["red_circle.png"]["model"] and rows["red_circle.png"]["prompt"].startswith("Describe")
    # Second run into the same (default) output folder resumes: nothing is captioned twice.
    again = _caption(bench, source=str(root), batch_size=2, **model)[-1]
    assert again.result["output_dir"] == done.result["output_dir"]
    assert (again.result["skipped"], again.result["captioned"], again.result["errors"]) == (4, 0, 1)


@needs_coco
def test_batched_captions_equal_one_at_a_time(bench, tiny_qwen3_vl_path, adapter_dir, tmp_path):
    # With the random adapter the tiny model says different things per image, so equality means
    # batching (left padding, image token positions) changes nothing.
    images = sorted((COCO_MINI / "val2017").glob("*.jpg"))[:3]
    common = {"model": str(tiny_qwen3_vl_path), "adapter": str(adapter_dir), "max_side": 128}
    single = []
    for path in images:
        done = _caption(bench, source=str(path), output_dir=str(tmp_path / path.stem), **common)[-1]
        assert done.status == "ok" and done.result["caption"]
        single.append(done.result["caption"])
    assert len(set(single)) == 3
    done = _caption(bench, source=str(COCO_MINI / "val2017"), limit=3, batch_size=3,
                    output_dir=str(tmp_path / "batched"), **common)[-1]
    with open(done.result["jsonl"], encoding="utf-8") as handle:
        batched = [json.loads(line)["caption"] for line in handle]
    assert batched == single


@needs_coco
def test_cancel_stops_between_batches_and_keeps_results(bench, tiny_qwen3_vl_path, tmp_path):
    cancel = CancelToken()
    stream = bench.run("captioner", "caption", {
        "source": str(COCO_MINI / "val2017"), "model": str(tiny_qwen3_vl_path), "max_new_tokens": 4,
        "max_side": 64, "batch_size": 2, "limit": 20, "output_dir": str(tmp_path / "out")}, cancel=cancel)
    events = []
    for event in stream:
        events.append(event)
        if isinstance(event, ev.Progress) and event.done == 2:
            cancel.cancel()
    assert events[-1].status == "cancelled"
    lines = (tmp_path / "out" / "captions.jsonl").read_text().splitlines()
    assert len(lines) == 2 and len((tmp_path / "out" / "captions.csv").read_text().splitlines()) == 3


@needs_coco
def test_compare_base_and_adapter_with_references(bench, tiny_qwen3_vl_path, adapter_dir):
    events = list(bench.run("captioner", "compare", {
        "source": str(COCO_MINI / "val2017"), "model": str(tiny_qwen3_vl_path), "adapter": str(adapter_dir),
        "references": str(COCO_REFS), "limit": 3, "max_new_tokens": 8, "max_side": 128}))
    done = events[-1]
    assert done.status == "ok", done.summary
    gallery = [e for e in events if isinstance(e, ev.Image)]
    assert len(gallery) == 3 and all("base: " in e.caption and "adapter: " in e.caption for e in gallery)
    # The web view serves only LocalQwen's own folders: the gallery previews live there.
    from localqwen.web.event_renderer import RunView

    view = RunView(allowed_roots=[bench.paths.outputs_dir, bench.paths.uploads_dir])
    for event in events:
        view.add(event)
    assert len(view.images) == 3 and all(Path(path).is_file() for path, _ in view.images)
    table = next(e for e in events if isinstance(e, ev.Table) and e.title == "Base vs adapter")
    assert table.columns == ["image", "base", "adapter", "reference"] and len(table.rows) == 3
    assert any(row[1] != row[2] for row in table.rows)  # the adapter changes what the model says
    assert set(done.result["scores"]) == {"base", "adapter"}


@needs_coco
def test_metrics_before_and_after_an_adapter(bench, tiny_qwen3_vl_path, adapter_dir):
    events = list(bench.run("captioner", "metrics", {
        "references": str(COCO_REFS), "model": str(tiny_qwen3_vl_path), "adapter": str(adapter_dir),
        "limit": 4, "max_new_tokens": 8, "max_side": 128}))
    done = events[-1]
    assert done.status == "ok", done.summary
    scores = done.result["scores"]
    assert list(scores) == ["base", "adapter"] and all(s["images"] == 4 for s in scores.values())
    assert all(0 <= s["bleu4"] <= 1 and s["cider"] is not None for s in scores.values())
    assert any(isinstance(e, ev.FileWritten) and e.path.endswith("metrics.json") for e in events)
