"""The plugin's model-free actions through the real workbench and CLI: COCO download (hub faked,
see test_captioner_coco.py), CSV -> JSON, and metrics of saved captions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from captioner_support import COCO_MINI, hub_rows, needs_coco
from localqwen_captioner import coco

from localqwen.app import Workbench
from localqwen.plugin_api import FormError
from localqwen.plugin_api import events as ev


@pytest.fixture
def bench():
    return Workbench.create()


def test_plugin_loads_through_its_entry_point(bench):
    plugin = bench.host.get("captioner")
    assert [a.id for a in plugin.actions()] == ["caption", "compare", "coco-download", "coco-to-json", "metrics"]


@needs_coco
def test_coco_download_then_to_json_through_the_workbench(bench, monkeypatch, tmp_path):
    monkeypatch.setattr(coco, "load_hub_rows", lambda split: hub_rows(20))  # the hub: unreachable here
    events = list(bench.run("captioner", "coco-download", {"rows": 20}))
    done = events[-1]
    assert done.status == "ok" and done.result["rows"] == 20
    csv_path = Path(done.result["csv"])
    assert csv_path.parent == bench.paths.plugin_data_dir("captioner") / "coco_2014_caption"
    events = list(bench.run("captioner", "coco-to-json", {"csv_file": str(csv_path), "top_k": 15, "test_size": 2}))
    done = events[-1]
    assert done.status == "ok" and done.result["train_rows"] + done.result["test_rows"] == 15
    assert [e.path for e in events if isinstance(e, ev.FileWritten)] == [done.result["train"], done.result["test"]]
    assert json.loads(Path(done.result["train"]).read_text())[0]["messages"][1]["role"] == "assistant"


def test_bad_input_is_reported_clearly(bench, tmp_path):
    with pytest.raises(FormError) as info:
        bench.run("captioner", "coco-download", {"rows": 0})
    assert "rows" in info.value.errors
    events = list(bench.run("captioner", "coco-to-json", {"csv_file": str(tmp_path / "nope.csv")}))
    assert events[-1].status == "failed" and "no such CSV file" in events[-2].message
    events = list(bench.run("captioner", "caption", {"source": str(tmp_path)}))
    assert events[-1].status == "failed" and "no images with extensions" in events[-2].message
    events = list(bench.run("captioner", "caption", {"source": str(tmp_path), "prompt_preset": "custom"}))
    assert "needs a custom prompt" in events[-2].message


@needs_coco
def test_metrics_of_saved_captions(bench, tmp_path):
    """Score human captions saved in the caption run's JSONL layout: leave-one-out on coco_mini."""
    data = json.loads((COCO_MINI / "annotations" / "captions_val2017.json").read_text())
    files = {image["id"]: image["file_name"] for image in data["images"]}
    lines, seen = [], set()
    for note in data["annotations"]:
        if note["image_id"] in seen:
            continue
        seen.add(note["image_id"])
        path = (COCO_MINI / "val2017" / files[note["image_id"]]).resolve()
        lines.append(json.dumps({"image": path.name, "path": str(path), "status": "ok", "caption": note["caption"]}))
    predictions = tmp_path / "captions.jsonl"
    predictions.write_text("\n".join(lines) + "\n")
    events = list(bench.run("captioner", "metrics", {
        "references": str(COCO_MINI / "annotations" / "captions_val2017.json"),
        "predictions": str(predictions), "limit": 0}))
    done = events[-1]
    scores = done.result["scores"]["captions"]
    # Each prediction is also one of its own references here, so the scores are high but not 1.
    assert done.status == "ok" and scores["images"] == 79
    assert scores["bleu4"] > 0.5 and scores["cider"] > 2 and scores["rouge_l"] > 0.6
    table = next(e for e in events if isinstance(e, ev.Table))
    assert table.columns[:4] == ["captions", "BLEU-4", "ROUGE-L", "CIDEr"]


@needs_coco
def test_cli_coco_commands(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from localqwen.cli.main import app

    monkeypatch.setattr(coco, "load_hub_rows", lambda split: hub_rows(6))  # the hub: unreachable here
    runner = CliRunner()
    # `coco` is the captioner's registered shortcut: the options are the action's form fields, as for `run`.
    out = runner.invoke(app, ["coco", "download", "--rows", "6", "--output-dir", str(tmp_path / "coco"), "--json"])
    assert out.exit_code == 0, out.output
    csv_path = tmp_path / "coco" / "captions.csv"
    assert json.loads(out.output.strip().splitlines()[-1])["result"]["csv"] == str(csv_path)
    out = runner.invoke(app, ["coco", "to-json", "--csv-file", str(csv_path), "--test-size", "1", "--json"])
    assert out.exit_code == 0, out.output
    done = json.loads(out.output.strip().splitlines()[-1])
    assert done["kind"] == "done" and done["result"]["test_rows"] >= 1
    # The same action through the generic plugin command; a missing CSV exits 1 with the reason.
    out = runner.invoke(app, ["run", "captioner", "coco-to-json", "--csv-file", str(tmp_path / "x.csv")])
    assert out.exit_code == 1 and "no such CSV file" in out.output


@needs_coco
def test_coco_data_source_is_registered_with_the_trainer(bench, tmp_path, monkeypatch):
    from localqwen.training.data_sources import build_data_source

    sources = bench.extensions.data_sources  # the captioner's register hook adds coco-captions
    assert {"coco-captions", "synthetic-shapes"} <= set(sources)
    assert sources["coco-captions"].plugin_id == "captioner"
    list(coco.download_coco(tmp_path / "coco", rows=8, source=hub_rows(8)))
    train = build_data_source(sources, "coco-captions", tmp_path / "from_csv", csv=tmp_path / "coco" / "captions.csv",
                              test_size=2)
    assert train.name == "captions_train.json" and (train.parent / "captions_test.json").exists()
    # Without a CSV it downloads first (the hub faked as everywhere in these tests).
    monkeypatch.setattr(coco, "load_hub_rows", lambda split: hub_rows(6))
    train = build_data_source(sources, "coco-captions", tmp_path / "from_hub", rows=6, test_size=0)
    assert len(json.loads(train.read_text())) == 6 and (tmp_path / "from_hub" / "images").is_dir()
