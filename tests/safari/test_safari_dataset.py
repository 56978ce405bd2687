"""generate: expert episodes as the seed's dataset.jsonl and as trainer conversation rows that the
trainer's own reader and validator accept; the ``safari`` data source reaches the trainer."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from event_streams import drain
from localqwen_safari.dataset import CONVERSATIONS_FILE, DATASET_FILE, GROUNDING_FILE, generate
from localqwen_safari.episode import tool_schemas
from localqwen_safari.policies import Decision, thought_consistent
from localqwen_safari.prompts import SYSTEM_PROMPT

from localqwen.training.data import read_rows, validate_rows
from localqwen.training.data_sources import build_data_source

_run = drain


def test_generate_writes_both_files_and_the_trainer_reads_them(tmp_path):
    from PIL import Image

    events, summary = _run(generate(tmp_path, 6, seed_start=500))
    assert events[-1].done == 6 and events[-1].total == 6
    seed_rows = [json.loads(line) for line in (tmp_path / DATASET_FILE).read_text().splitlines()]
    assert summary["rows"] == len(seed_rows) > 6
    assert {row["kind"] for row in seed_rows} == {"find-one", "find-two"}
    for row in seed_rows:
        assert set(row) >= {"image_file", "system_prompt", "context_text", "tool_calls", "thought"}
        assert row["system_prompt"] == SYSTEM_PROMPT
        image = Image.open(io.BytesIO((tmp_path / row["image_file"]).read_bytes()))
        assert image.size == (160, 160)
        calls = [(call["name"], call["arguments"]) for call in row["tool_calls"]]
        assert calls and thought_consistent(Decision(row["thought"], calls))
        assert f"Turn {row['turn']} of 25." in row["context_text"]

    rows = read_rows(tmp_path / CONVERSATIONS_FILE)
    report = validate_rows(rows)
    assert report.ok and len(report.valid) == len(seed_rows), report.summary()
    first, seed_first = rows[0], seed_rows[0]
    assert first["tools"] == tool_schemas()
    system, user, assistant = first["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["content"][0]["image"] == str(tmp_path / seed_first["image_file"])  # resolved by the reader
    assert user["content"][1]["text"] == seed_first["context_text"]
    assert assistant["content"] == "Thought: " + seed_first["thought"]
    assert [c["function"] for c in assistant["tool_calls"]] == seed_first["tool_calls"]


def test_oversampling_repeats_only_the_training_rows_of_target_turns(tmp_path):
    import pytest
    from localqwen_safari.dataset import TARGET_SITUATIONS

    _, plain = _run(generate(tmp_path / "plain", 6, seed_start=500, prompt="compact"))
    _, more = _run(generate(tmp_path / "more", 6, seed_start=500, prompt="compact", oversample=3))
    seed_rows = [json.loads(line) for line in (tmp_path / "more" / DATASET_FILE).read_text().splitlines()]
    target_turns = sum(row["situation"] in TARGET_SITUATIONS for row in seed_rows)
    assert target_turns > 0 and more["rows"] == plain["rows"] == len(seed_rows)  # one seed row per turn
    assert plain["training_rows"] == plain["rows"]
    assert more["training_rows"] == plain["rows"] + 2 * target_turns
    chat_rows = (tmp_path / "more" / CONVERSATIONS_FILE).read_text().splitlines()
    assert len(chat_rows) == more["training_rows"] and len(set(chat_rows)) == len(seed_rows)
    with pytest.raises(ValueError, match="oversample must be at least 1"):
        _run(generate(tmp_path / "bad", 1, oversample=0))


def test_grounding_rows_ask_where_an_animal_is_in_the_turns_view(tmp_path):
    import re

    from localqwen_safari.episode import Episode
    from localqwen_safari.missions import mission_for_seed
    from localqwen_safari.policies import offset_text, visible_animals

    _, summary = _run(generate(tmp_path, 4, seed_start=500, prompt="compact", grounding=2))
    assert summary["training_rows"] == 3 * summary["rows"]
    rows = read_rows(tmp_path / CONVERSATIONS_FILE)
    assert validate_rows(rows).ok
    questions = [row for row in rows if "tool_calls" not in row["messages"][-1]]
    assert len(questions) == 2 * summary["rows"]
    answers = [row["messages"][-1]["content"] for row in questions]
    assert any(a.startswith("No ") for a in answers) and any(" is " in a for a in answers)
    # The first turn of the first episode: the answers are what that view shows, nearest first.
    episode = Episode.start(mission_for_seed("find-one", 500))
    here, in_view = episode.position, visible_animals(episode)
    for row in questions[:2]:
        species = re.match(r"Where is the (\w+)\?", row["messages"][1]["content"][1]["text"]).group(1)
        cells = sorted((abs(r - here[0]) + abs(c - here[1]), (r, c)) for name, (r, c) in in_view if name == species)
        expected = f"The {species} is {offset_text(here, cells[0][1])}." if cells else f"No {species} in view."
        assert row["messages"][-1]["content"] == expected
    with pytest.raises(ValueError, match="grounding must be 0 or more"):
        _run(generate(tmp_path / "bad", 1, grounding=-1))

    # Apart: the same question rows in grounding.jsonl, the replies' rows without them.
    _, apart = _run(generate(tmp_path / "apart", 4, seed_start=500, prompt="compact", grounding=2, grounding_apart=True))
    assert apart["training_rows"] == apart["rows"] == summary["rows"]
    assert apart["grounding"] == str(tmp_path / "apart" / GROUNDING_FILE)
    replies = read_rows(tmp_path / "apart" / CONVERSATIONS_FILE)
    assert len(replies) == apart["rows"] and all("tool_calls" in row["messages"][-1] for row in replies)

    def raw(path):
        return [json.loads(line) for line in path.read_text().splitlines()]

    mixed = [row for row in raw(tmp_path / CONVERSATIONS_FILE) if "tool_calls" not in row["messages"][-1]]
    assert raw(tmp_path / "apart" / GROUNDING_FILE) == mixed


def test_same_seeds_same_dataset(tmp_path):
    _run(generate(tmp_path / "a", 3, seed_start=42))
    _run(generate(tmp_path / "b", 3, seed_start=42))
    for name in (DATASET_FILE, CONVERSATIONS_FILE):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    images = sorted(p.name for p in (tmp_path / "a" / "images").iterdir())
    assert all((tmp_path / "a" / "images" / n).read_bytes() == (tmp_path / "b" / "images" / n).read_bytes()
               for n in images)


def test_the_safari_data_source_is_registered_by_the_plugin(tmp_path):
    from localqwen.app import Workbench

    sources = Workbench.create().extensions.data_sources
    assert sources["safari"].plugin_id == "safari"
    train = build_data_source(sources, "safari", tmp_path, episodes=2, kind="find-one")
    assert train == tmp_path / CONVERSATIONS_FILE
    assert validate_rows(read_rows(train)).ok


def test_rows_render_with_the_qwen3_vl_chat_template(tmp_path, tiny_qwen3_vl_path):
    """The tool schema reaches the prompt and the calls become <tool_call> blocks."""
    from transformers import AutoProcessor

    _run(generate(tmp_path, 1, kind="find-one", seed_start=9))
    row = read_rows(tmp_path / CONVERSATIONS_FILE)[0]
    processor = AutoProcessor.from_pretrained(tiny_qwen3_vl_path)
    text = processor.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
    assert '"name": "declare_found"' in text and "<tools>" in text
    call = row["messages"][2]["tool_calls"][-1]["function"]
    assert f'<tool_call>\n{{"name": "{call["name"]}", "arguments": ' in text
    assert "<|vision_start|>" in text


def test_a_run_stopped_midway_leaves_the_last_dataset_whole(tmp_path):
    """Stopped (a cancelled job, Ctrl-C) after its first progress event, a run leaves the dataset
    that was there, its images included, and no staging folder behind."""
    _run(generate(tmp_path, 4, seed_start=500))
    def files() -> dict[Path, bytes]:  # the lock file aside: it names its last holder
        return {path.relative_to(tmp_path): path.read_bytes() for path in tmp_path.rglob("*")
                if path.is_file() and path.name != ".generate.lock"}

    before = files()
    run = generate(tmp_path, 40, seed_start=900)
    next(run)  # 20 episodes written into the staging folder
    assert any(tmp_path.glob(".generating-*/images/*.png"))
    run.close()
    assert files() == before and not list(tmp_path.glob(".generating-*"))


def test_a_finished_run_replaces_the_last_one_and_leaves_none_of_its_images(tmp_path):
    _run(generate(tmp_path, 6, seed_start=500))
    (tmp_path / ".generating-999999" / "images").mkdir(parents=True)  # left by a killed run
    _, summary = _run(generate(tmp_path, 2, seed_start=700))
    rows = [json.loads(line) for line in (tmp_path / DATASET_FILE).read_text().splitlines()]
    assert len(rows) == summary["rows"] and {row["episode"] for row in rows} == {0, 1}
    images = {f"images/{path.name}" for path in (tmp_path / "images").iterdir()}
    assert images == {row["image_file"] for row in rows}  # the 6-episode run's other images are gone
    assert not list(tmp_path.glob(".generating-*"))


def test_two_runs_into_one_folder_at_once_are_refused(tmp_path):
    first = generate(tmp_path, 40, seed_start=500)
    next(first)
    with pytest.raises(ValueError, match="another generate is writing there"):
        _run(generate(tmp_path, 2, seed_start=700))
    _, summary = _run(first)
    assert summary["episodes"] == 40 and len((tmp_path / DATASET_FILE).read_text().splitlines()) == summary["rows"]
