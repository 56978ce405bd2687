"""Mission files: both world kinds load; every bad line is named with its number and reason."""

from __future__ import annotations

import json

import pytest
from localqwen_safari.missions import MissionFileError, load_missions, mission_for_seed, parse_seeds

GOOD_MAP = {"id": "m2", "kind": "find-two", "targets": ["lion", "zebra"],
            "map": ["....~~", "Z...L.", "......"], "start": [2, 0], "max_turns": 12}


def _write(tmp_path, lines):
    path = tmp_path / "missions.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_both_kinds_of_mission_load(tmp_path):
    path = _write(tmp_path, [{"id": "m1", "kind": "find-one", "targets": ["zebra"], "seed": 123}, "", GOOD_MAP])
    first, second = load_missions(path)
    assert first.targets == ("zebra",) and first.world().size == (32, 32) and first.max_turns == 25
    world = second.world()
    assert second.max_turns == 12 and world.start == (2, 0) and world.size == (3, 6)
    assert {a.species for a in world.animals} == {"zebra", "lion"}


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "line 2: invalid JSON"),
    ({"id": "x", "kind": "find-three", "targets": ["zebra"], "seed": 1}, "line 2: 'kind' must be one of"),
    ({"id": "x", "kind": "find-one", "targets": ["unicorn"], "seed": 1}, "line 2: unknown species 'unicorn'"),
    ({"id": "x", "kind": "find-two", "targets": ["zebra"], "seed": 1}, "line 2: 'targets' must list 2 species"),
    ({"id": "x", "kind": "find-one", "targets": ["zebra"]}, "line 2: give either 'seed'"),
    ({"id": "x", "kind": "find-one", "targets": ["zebra"], "seed": 1, "map": ["Z."], "start": [0, 1]},
     "line 2: give either 'seed'"),
    ({"id": "x", "kind": "find-one", "targets": ["zebra"], "map": ["Z.x"], "start": [0, 1]},
     "line 2: map row 0, column 2: unknown cell 'x'"),
    ({"id": "x", "kind": "find-one", "targets": ["giraffe"], "map": ["Z.."], "start": [0, 1]},
     "line 2: the map has no giraffe"),
    ({"id": "x", "kind": "find-one", "targets": ["zebra"], "map": ["Z~."], "start": [0, 1]},
     "line 2: the start \\[0, 1\\] is on water"),
    ({"id": "x", "kind": "find-one", "targets": ["zebra"], "seed": 1, "colour": "red"}, "line 2: unknown key"),
    ({"id": "m1", "kind": "find-one", "targets": ["zebra"], "seed": 5}, "line 2: id 'm1' is already used on line 1"),
    ({"id": "x", "kind": "find-one", "targets": ["zebra"], "seed": 1, "max_turns": 0}, "line 2: 'max_turns'"),
    ("[1, 2]", "line 2: each line must be a JSON object"),
])
def test_bad_lines_are_named(tmp_path, line, message):
    path = _write(tmp_path, [{"id": "m1", "kind": "find-one", "targets": ["zebra"], "seed": 123}, line])
    with pytest.raises(MissionFileError, match="missions.jsonl " + message):
        load_missions(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(MissionFileError, match="not found"):
        load_missions(tmp_path / "nope.jsonl")
    with pytest.raises(MissionFileError, match="no missions"):
        load_missions(_write(tmp_path, [""]))


def test_seed_missions_and_ranges():
    assert parse_seeds("1000-1002") == [1000, 1001, 1002]
    assert parse_seeds("1, 5-6") == [1, 5, 6]
    for bad in ("9-3", "a-b", "", "1-"):
        with pytest.raises(ValueError, match="seed"):
            parse_seeds(bad)
    one, two = mission_for_seed("find-one", 7), mission_for_seed("find-two", 7)
    assert len(one.targets) == 1 and len(two.targets) == 2 and len(set(two.targets)) == 2
    assert mission_for_seed("find-two", 7) == two
    with pytest.raises(ValueError, match="unknown mission kind"):
        mission_for_seed("find-all", 7)
