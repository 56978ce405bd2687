"""Data readers, validation by row number and reason, preview."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from localqwen.training.collator import ChatCollator
from localqwen.training.data import DataError, preview_rows, read_rows, split_eval, validate_rows


def _image(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 32), "red").save(path)
    return path


def _chat(answer="a red square", image=None, system=None):
    user = [{"type": "image", "image": image}, {"type": "text", "text": "Describe."}] if image else "Describe."
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": user},
        {"role": "assistant", "content": answer},
    ]
    return {"messages": messages}


def test_jsonl_bad_rows_are_reported_by_number_and_reason(tmp_path):
    _image(tmp_path / "img" / "ok.png")
    lines = [
        json.dumps(_chat(image="img/ok.png")),  # 1 good, relative image path
        json.dumps(_chat(image="img/missing.png")),  # 2 missing image
        json.dumps(_chat(answer="   ")),  # 3 empty answer
        "{not json",  # 4
        json.dumps({"messages": [{"role": "robot", "content": "hi"}]}),  # 5
        json.dumps({"messages": [{"role": "user", "content": "hi"}]}),  # 6
        json.dumps(_chat(system="Be brief.")),  # 7 good
    ]
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(lines) + "\n")
    rows = read_rows(path)
    assert rows[0]["messages"][0]["content"][0]["image"] == str(tmp_path / "img" / "ok.png")
    report = validate_rows(rows, "sft")
    reasons = {p.row: p.reason for p in report.problems}
    assert set(reasons) == {2, 3, 4, 5, 6}
    assert reasons[2].startswith("missing image") and "missing.png" in reasons[2]
    assert reasons[3].startswith("empty answer")
    assert reasons[4].startswith("invalid JSON")
    assert "unknown role 'robot'" in reasons[5]
    assert reasons[6] == "no assistant turn to learn from"
    assert len(report.valid) == 2
    assert "2 of 7 rows are valid" in report.summary()


def test_too_long_rows_are_flagged_with_their_token_count(tmp_path, tiny_qwen3_path):
    from transformers import AutoTokenizer

    collator = ChatCollator(AutoTokenizer.from_pretrained(tiny_qwen3_path))
    rows = [_chat("short"), _chat("word " * 200)]
    report = validate_rows(rows, "sft", max_length=64, count_tokens=collator.count_tokens)
    assert [p.row for p in report.problems] == [2]
    assert report.problems[0].reason.startswith("too long (") and "> max_length 64" in report.problems[0].reason


def test_json_csv_and_datasets_folder_read_to_the_same_rows(tmp_path):
    import datasets

    _image(tmp_path / "a.png")
    rows = [_chat("a red square", image="a.png", system="sys"), _chat("plain answer")]
    (tmp_path / "train.json").write_text(json.dumps({"data": rows}))
    from_json = read_rows(tmp_path / "train.json")

    csv_path = tmp_path / "train.csv"
    csv_path.write_text("image,question,caption,system\na.png,Describe.,a red square,sys\n,Describe.,plain answer,\n")
    from_csv = read_rows(csv_path)
    assert from_csv == from_json

    folder = tmp_path / "hf"
    datasets.Dataset.from_dict({"row": [0, 1], "messages": [json.dumps(r["messages"]) for r in rows]}).save_to_disk(folder)
    # A real saved folder whose message column is JSON text (a common export) is decoded by CSV-style rules
    # only for CSV; here we check the folder reader returns every row with its columns.
    from_folder = read_rows(folder)
    assert [r["row"] for r in from_folder] == [0, 1]


def test_csv_messages_column_and_dpo_columns(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text('prompt,chosen,rejected\n"What is 2+2?",4,5\n"Hi",,bye\n')
    rows = read_rows(path)
    report = validate_rows(rows, "dpo")
    assert [p.row for p in report.problems] == [2]
    assert report.problems[0].reason == "missing 'chosen'"
    assert report.valid[0] == {"prompt": "What is 2+2?", "chosen": "4", "rejected": "5"}


def test_modelscope_rows_are_converted(monkeypatch, tmp_path):
    """ModelScope's hub is unreachable here: only the hub call (modelscope_load) is faked."""
    from localqwen.training import data

    image = _image(tmp_path / "coco.jpg")
    calls = {}

    def fake_load(name, subset, split):
        calls.update(name=name, split=split)
        return [{"image_id": "1", "image": str(image), "caption": "a cat on a mat"}]

    monkeypatch.setattr(data, "modelscope_load", fake_load)
    rows = read_rows("modelscope:modelscope/coco_2014_caption@validation")
    assert calls == {"name": "modelscope/coco_2014_caption", "split": "validation"}
    assert validate_rows(rows).ok
    assert rows[0]["messages"][-1] == {"role": "assistant", "content": "a cat on a mat"}


def test_preview_and_split(tmp_path):
    rows = [_chat(f"answer {i}", system="sys") for i in range(10)]
    columns, table = preview_rows(rows, n=3)
    assert columns[:4] == ["#", "system", "user", "assistant"]
    assert table[2][:4] == [3, "sys", "Describe.", "answer 2"]
    train, held = split_eval(rows, 0.2, seed=1)
    assert len(held) == 2 and len(train) == 8
    assert split_eval(rows, 0.2, seed=1)[1] == held  # same seed, same held-out rows


def test_unreadable_sources_fail_clearly(tmp_path):
    with pytest.raises(DataError, match="data not found"):
        read_rows(tmp_path / "nope.jsonl")
    (tmp_path / "x.parquet").write_text("")
    with pytest.raises(DataError, match="unsupported data file type"):
        read_rows(tmp_path / "x.parquet")


def test_bucket_batching_groups_by_token_counts_not_json_characters(tmp_path, tiny_qwen3_path):
    """The trainer's length buckets take the token counts the validation made. Before, they took the
    JSON's character count: a row's metadata (or, in templated rows, the one word that differs)
    decided its batch, and a small model learned each batch's answer instead of the prompt."""
    from transformers import AutoTokenizer

    from localqwen.training.job_data import sft_dataset

    collator = ChatCollator(AutoTokenizer.from_pretrained(tiny_qwen3_path))
    rows = [{**_chat("same answer"), "id": "a"}, {**_chat("same answer"), "id": "a" * 500}, _chat("word " * 30)]
    report = validate_rows(rows, "sft", count_tokens=collator.count_tokens)
    assert report.lengths == [collator.count_tokens(row) for row in rows]
    assert report.lengths[0] == report.lengths[1] < report.lengths[2]  # 500 characters of id add no token

    dataset = sft_dataset(report.valid, report.lengths)
    assert dataset["length"] == report.lengths
    assert "length" not in sft_dataset(report.valid).column_names  # random batches need none
    with pytest.raises(ValueError, match="2 lengths for 3 rows"):
        sft_dataset(report.valid, report.lengths[:2])
