"""DAgger rows: the expert's label on the agent's own state (with a notepad rebuilt from what it
really saw), rows written as the trainer reads them, and real rounds of the CLI action with a tiny Qwen3-VL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from event_streams import drain
from localqwen_safari.dagger import aggregate, collect_rows, expert_label, honest_notepad
from localqwen_safari.episode import Episode
from localqwen_safari.missions import KINDS, Mission, mission_for_seed
from localqwen_safari.policies import Decision, expert, random_policy, sweeper, tour

from localqwen.training.data import read_rows, validate_rows


@pytest.mark.parametrize("teacher", [expert, sweeper, tour], ids=["expert", "sweeper", "tour"])
def test_on_the_teachers_own_states_the_label_is_the_teachers_decision(teacher):
    turns = 0
    for seed in range(100_000, 100_012):
        episode = Episode.start(mission_for_seed(list(KINDS)[seed % 2], seed))
        while not episode.done:
            decision = teacher(episode)
            label = expert_label(episode, teacher)
            assert (label.thought, label.calls, label.situation) == (decision.thought, decision.calls, decision.situation)
            episode.play_turn(decision.calls)
            turns += 1
    assert turns > 150


def lion_near_zebra_far() -> Mission:
    """A lion two cells from the start (in view) and a zebra far away."""
    rows = ["L" + "." * 9] + ["." * 10] * 14 + ["." * 9 + "Z"]
    return Mission("m", "find-one", ("zebra",), map=tuple(rows), start=(2, 2))


def test_an_invented_sighting_is_not_followed_and_is_struck_from_the_notepad():
    # a lion two cells away in view, and a zebra the agent has never seen
    mission = lion_near_zebra_far()
    episode = Episode.start(mission)
    episode.notepad = "Seen: zebra at (3, 3). Route to (9, 2): down 4."
    assert honest_notepad(episode) == "Seen: lion at (0, 0). Route to (9, 2): down 4."
    label = expert_label(episode)
    assert label.calls[0][0] == "update_notepad" and "zebra" not in label.calls[0][1]["text"]
    assert "lion at (0, 0)" in label.calls[0][1]["text"]
    assert label.situation != "target remembered"  # the made-up zebra is not walked to
    assert "declare_found" not in [name for name, _ in label.calls]


class RandomBatch:
    """The random policy behind the batch interface the model policy has."""

    def decide(self, episodes: list[Episode]) -> list[Decision]:
        return [random_policy(episode) for episode in episodes]


def test_collected_rows_are_training_rows_of_the_states_the_policy_reached(tmp_path):
    missions = [mission_for_seed("find-one", seed) for seed in (300_000, 300_001, 300_002)]
    stream = collect_rows(RandomBatch(), missions, tmp_path / "rows", batch_size=2)
    events, summary = drain(stream)
    assert [event.done for event in events] == [2, 3]
    chat = read_rows(tmp_path / "rows" / "conversations.jsonl")
    seeds = [json.loads(line) for line in (tmp_path / "rows" / "dataset.jsonl").read_text().splitlines()]
    assert validate_rows(chat).ok and len(chat) == len(seeds) == summary["rows"] > 3
    assert all((tmp_path / "rows" / row["image_file"]).is_file() for row in seeds)
    assert all(row["situation"] for row in seeds)
    # the random player wanders: the labels are the expert's decisions on *its* states, turn by turn
    assert [row["turn"] for row in seeds if row["episode"] == 0] == list(range(1, 1 + sum(r["episode"] == 0 for r in seeds)))
    assert summary["policy_success_rate"] == 0.0
    mixed = aggregate([tmp_path / "rows", tmp_path / "rows"], tmp_path / "mix.jsonl")
    assert mixed == 2 * len(chat)
    rows = read_rows(tmp_path / "mix.jsonl")
    assert validate_rows(rows).ok
    image = rows[0]["messages"][1]["content"][1]["image"]  # the compact profile: context, then the view
    assert image.startswith("/") and image.endswith(seeds[0]["image_file"].split("/")[-1])


@pytest.mark.slow  # a tiny Qwen3-VL plays 2 x 3 missions and trains 2 x 10 steps on the labelled rows (~1-2 min)
def test_dagger_rounds_from_the_cli_with_a_real_tiny_model(tmp_path):
    from localqwen_safari.dataset import generate
    from localqwen_safari.learning import build_tiny_model
    from typer.testing import CliRunner

    from localqwen.cli.main import app

    base = build_tiny_model(tmp_path / "base", hidden=64, layers=2, vision_depth=1, corpus_episodes=10)
    for _ in generate(tmp_path / "expert", 2, prompt="compact"):
        pass
    runner = CliRunner()
    result = runner.invoke(app, ["run", "safari", "dagger", "--model", str(base), "--data", str(tmp_path / "expert"),
                                 "--rounds", "2", "--episodes", "3", "--steps", "10", "--max-new-tokens", "16",
                                 "--output-dir", str(tmp_path / "dagger"), "--json"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [e["kind"] for e in events].count("done") == 1 and events[-1]["status"] == "ok"  # the jobs' own Done are logs
    playing = [e for e in events if e["kind"] == "progress" and e.get("total") == 3]
    assert [e["done"] for e in playing][-1] == 3  # the games' progress, then the training's
    assert any(e["kind"] == "progress" and e.get("total") == 10 for e in events)
    first, second = events[-1]["result"]["rounds"]
    expert_rows = len((tmp_path / "expert" / "conversations.jsonl").read_text().splitlines())
    assert first["episodes"] == 3 and first["rows"] >= 3 and first["mixed_rows"] == expert_rows + first["rows"]
    assert second["mixed_rows"] == expert_rows + first["rows"] + second["rows"]  # rows aggregate over rounds
    assert first["steps"] == second["steps"] == 10
    assert events[-1]["result"]["model"] == second["model"] and (Path(second["model"]) / "config.json").is_file()
    assert (tmp_path / "dagger" / "round-2" / "rows" / "conversations.jsonl").is_file()
    wrong = runner.invoke(app, ["run", "safari", "dagger", "--model", str(base), "--data", str(tmp_path), "--json"])
    assert wrong.exit_code != 0 and "no conversations.jsonl in" in wrong.output
