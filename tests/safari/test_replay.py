"""Saved episodes: play -> episode.jsonl -> replay gives the same turns (and the same bytes for
the same seed), the GIF has one frame per turn, and broken files fail naming the line and field."""

from __future__ import annotations

import json

import pytest
from localqwen_safari.episode_file import EpisodeFileError, load_episode
from localqwen_safari.gif import write_gif
from localqwen_safari.missions import Mission, mission_for_seed
from localqwen_safari.policies import get_policy
from localqwen_safari.replay import play_to_end, replay
from typer.testing import CliRunner

from localqwen.cli.main import app

runner = CliRunner()


def _played(mission, policy="expert"):
    return play_to_end(mission, get_policy(policy), policy)


def test_save_then_replay_gives_the_same_turns_and_bytes(tmp_path):
    mission = mission_for_seed("find-two", 7)
    frames, log = _played(mission)
    assert log.end == {"outcome": "success", "success": True, "turns": len(frames)}
    path = log.save(tmp_path / "a.jsonl")
    again = _played(mission)[1].save(tmp_path / "b.jsonl")
    assert path.read_bytes() == again.read_bytes()  # same seed, same policy: same file
    assert path.stat().st_size < 20_000  # no images inside
    loaded = load_episode(path)
    assert loaded.dumps() == log.dumps()
    replayed = replay(loaded)
    assert [(f.view, f.map, f.thought, f.calls, f.notepad, f.position, f.found) for f in replayed] == \
        [(f.view, f.map, f.thought, f.calls, f.notepad, f.position, f.found) for f in frames]
    assert replayed[-1].done and replayed[-1].outcome == "success"


def test_a_hand_made_world_and_a_wasted_turn_replay_too(tmp_path):
    mission = Mission("near", "find-one", ("zebra",), map=("Z....", ".....", "~~..."), start=(1, 2), max_turns=3)

    def clumsy(episode):  # a bad call, a turn without any call, then the right ones
        from localqwen_safari.policies import Decision

        plan = [Decision("hmm", [("fly", {"to": "moon"})]), Decision("nothing"),
                Decision("there", [("move", {"direction": "left", "steps": 1}),
                                   ("declare_found", {"species": "zebra"}), ("declare_done", {})])]
        return plan[episode.turn]

    frames, log = play_to_end(mission, clumsy, "clumsy")
    assert frames[0].calls[0]["ok"] is False and frames[1].calls == []
    assert frames[1].call_lines() == ["(no tool call: a wasted turn)"]
    path = log.save(tmp_path / "clumsy.jsonl")
    replayed = replay(load_episode(path))
    assert [f.calls for f in replayed] == [f.calls for f in frames] and replayed[-1].outcome == "success"


def test_cli_play_saves_and_replay_exports_one_gif_frame_per_turn(tmp_path):
    from PIL import Image

    result = runner.invoke(app, ["run", "safari", "play", "--policy", "greedy", "--seed", "3",
                                 "--output-dir", str(tmp_path / "play"), "--json"])
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout.splitlines()[-1])
    episode = tmp_path / "play" / "episode.jsonl"
    assert done["result"]["episode"] == str(episode) and episode.is_file()
    gif = tmp_path / "out" / "greedy.gif"
    result = runner.invoke(app, ["run", "safari", "replay", "--episode", str(episode), "--gif", str(gif), "--json"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    replay_done = events[-1]["result"]
    assert replay_done["turns"] == done["result"]["turns"] and replay_done["outcome"] == done["result"]["outcome"]
    assert sum(e["kind"] == "tool_call" for e in events) >= replay_done["turns"] - 1
    with Image.open(gif) as image:
        assert image.n_frames == done["result"]["turns"]
        assert image.size[0] > 160 + 256  # view and map side by side


def test_gif_frames_differ_and_an_empty_episode_is_refused(tmp_path):
    from PIL import Image, ImageChops

    frames, _ = _played(mission_for_seed("find-one", 11))
    path = write_gif(frames[:3], tmp_path / "three.gif", frame_ms=100)
    with Image.open(path) as image:
        shots = []
        for index in range(image.n_frames):
            image.seek(index)
            shots.append(image.convert("RGB"))
    assert len(shots) == 3 and ImageChops.difference(shots[0], shots[1]).getbbox() is not None
    with pytest.raises(ValueError, match="no turns"):
        write_gif([], tmp_path / "none.gif")


@pytest.fixture
def saved(tmp_path):
    _, log = _played(mission_for_seed("find-one", 7))
    return log.save(tmp_path / "ep.jsonl")


def _rewrite(path, number, change):
    """Apply ``change`` to the JSON object on line ``number`` (1-based)."""
    lines = path.read_text().splitlines()
    value = json.loads(lines[number - 1])
    change(value)
    lines[number - 1] = json.dumps(value)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_text(p.read_text()[:-25]), r"ep.jsonl line \d+: invalid JSON .* cut off"),
    (lambda p: p.write_text("".join(p.read_text().splitlines(True)[:-1])), "without its closing 'end' line"),
    (lambda p: p.write_text(""), "the file is empty"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00"), "not a text file"),
    (lambda p: _rewrite(p, 1, lambda v: v.update(format="other")), "line 1: not a safari episode"),
    (lambda p: _rewrite(p, 1, lambda v: v["mission"].update(kind="find-all")), "line 1: mission: 'kind' must be"),
    (lambda p: _rewrite(p, 2, lambda v: v.update(thought=3)), "line 2: 'thought' must be a string"),
    (lambda p: _rewrite(p, 3, lambda v: v.update(turn=7)), "line 3: 'turn' is 7, expected 2"),
    (lambda p: _rewrite(p, 2, lambda v: v.pop("position")), "line 2: a turn needs position"),
    (lambda p: _rewrite(p, 2, lambda v: v["calls"][0].pop("ok")), r"line 2: calls\[0\] must be an object"),
])
def test_a_broken_file_names_the_line_and_field(saved, damage, message):
    damage(saved)
    with pytest.raises(EpisodeFileError, match=message):
        replay(load_episode(saved))


@pytest.mark.parametrize("damage, message", [
    (lambda p: _rewrite(p, 3, lambda v: v.update(position=[0, 0])), r"line 3 \(turn 2\): 'position' is \[0, 0\]"),
    (lambda p: _rewrite(p, 2, lambda v: v["calls"][0].update(result="moved far")), r"line 2 \(turn 1\): calls\[0\]"),
    (lambda p: _rewrite(p, 1, lambda v: v["mission"].update(seed=8)), "does not match its mission|replaying gives"),
    (lambda p: _rewrite(p, len(p.read_text().splitlines()), lambda v: v["end"].update(outcome="out of turns")),
     "'end' is"),
])
def test_a_file_that_does_not_match_its_world_is_refused(saved, damage, message):
    damage(saved)
    with pytest.raises(EpisodeFileError, match=message):
        replay(load_episode(saved))


def test_cli_replay_of_a_bad_file_fails_with_the_reason(saved):
    _rewrite(saved, 2, lambda v: v.update(notepad=5))
    result = runner.invoke(app, ["run", "safari", "replay", "--episode", str(saved)])
    assert result.exit_code != 0 and "ep.jsonl line 2: 'notepad' must be a string" in result.output
