"""The tools' rules on a hand-made world: moves stop at water, rock, animals and edges; finds must
be within one cell and in order; bad calls become error results, never exceptions."""

from __future__ import annotations

import pytest
from localqwen_safari.episode import Episode, tool_schemas
from localqwen_safari.missions import Mission

MAP = [
    "........",
    "..~.....",
    "........",
    "...#....",
    ".......Z",
    "L.......",
]


def _episode(kind="find-one", targets=("zebra",), start=(2, 2), max_turns=25) -> Episode:
    return Episode.start(Mission("t", kind, targets, map=tuple(MAP), start=start, max_turns=max_turns))


def test_move_walks_and_reports():
    episode = _episode()
    [run] = episode.play_turn([("move", {"direction": "right", "steps": 3})])
    assert run.ok and run.result == "moved right 3 steps, now at row 2, col 5"
    assert episode.position == (2, 5) and episode.path == [(2, 2), (2, 3), (2, 4), (2, 5)]


def test_move_stops_at_water_rock_animal_and_edge():
    episode = _episode()
    [run] = episode.play_turn([("move", {"direction": "up", "steps": 2})])
    assert run.ok and "0 of 2 steps" in run.result and "stopped by water at row 1, col 2" in run.result
    assert episode.position == (2, 2)
    episode.play_turn([("move", {"direction": "right", "steps": 1})])
    [run] = episode.play_turn([("move", {"direction": "down", "steps": 4})])
    assert "stopped by rock at row 3, col 3" in run.result and episode.position == (2, 3)
    episode = _episode(start=(4, 4))
    [run] = episode.play_turn([("move", {"direction": "right", "steps": 4})])
    assert run.result == "moved right 2 of 4 steps, now at row 4, col 6; stopped by a zebra at row 4, col 7"
    [run] = episode.play_turn([("move", {"direction": "down", "steps": 4})])
    assert run.result.endswith("stopped by the edge of the map") and episode.position == (5, 6)


def test_bad_calls_are_error_results():
    episode = _episode()
    runs = episode.play_turn([
        ("move", {"direction": "up-left", "steps": 1}),
        ("move", {"direction": "up", "steps": 5}),
        ("move", {"direction": "up"}),
        ("fly", {}),
        ("declare_found", {"species": "unicorn"}),
    ])
    assert [run.ok for run in runs] == [False] * 5
    assert "direction must be one of" in runs[0].result
    assert "steps must be at most 4" in runs[1].result
    assert "missing required argument 'steps'" in runs[2].result
    assert "unknown tool 'fly'" in runs[3].result
    assert episode.calls == 5 and episode.valid_calls == 0 and episode.position == (2, 2)
    # the errors are what the agent reads next turn
    assert "error: unknown tool 'fly'" in episode.context_text()


def test_one_move_per_turn_and_wasted_turns():
    episode = _episode()
    runs = episode.play_turn([("move", {"direction": "right", "steps": 1}), ("move", {"direction": "right", "steps": 1})])
    assert runs[0].ok and not runs[1].ok and "only one move per turn" in runs[1].result
    episode.play_turn([])
    assert episode.turn == 2 and episode.calls == 3 and episode.valid_calls == 1
    assert "made no tool call" in episode.context_text()


def test_declare_found_within_one_cell_and_false_declares():
    episode = _episode(start=(4, 4))
    [run] = episode.play_turn([("declare_found", {"species": "zebra"})])
    assert not run.ok and "no zebra within one cell of row 4, col 4" in run.result
    episode.play_turn([("move", {"direction": "right", "steps": 2})])
    runs = episode.play_turn([("declare_found", {"species": "lion"}), ("declare_found", {"species": "zebra"}),
                              ("declare_done", {})])
    assert [run.ok for run in runs] == [False, True, True]
    assert "not a target" in runs[0].result and runs[2].result == "mission complete"
    assert episode.success and episode.declares == 3 and episode.false_declares == 2
    # diagonal neighbours count as within one cell
    episode = _episode(start=(5, 6))
    assert episode.play_turn([("declare_found", {"species": "zebra"})])[0].ok


def test_find_two_keeps_order_and_done_too_early_fails():
    episode = _episode("find-two", ("lion", "zebra"), start=(4, 6))
    [run] = episode.play_turn([("declare_found", {"species": "zebra"})])
    assert not run.ok and "find the lion first" in run.result
    [run] = episode.play_turn([("declare_done", {})])
    assert run.result == "mission over: not found lion, zebra"
    assert episode.done and not episode.success and episode.outcome == "gave up early"
    with pytest.raises(RuntimeError, match="over"):
        episode.play_turn([("move", {"direction": "left", "steps": 1})])


def test_out_of_turns():
    episode = _episode(max_turns=2)
    episode.play_turn([("move", {"direction": "left", "steps": 1})])
    assert not episode.done
    episode.play_turn([("move", {"direction": "left", "steps": 1})])
    assert episode.done and episode.outcome == "out of turns" and not episode.success


def test_tool_schemas_are_qwen_function_definitions():
    schemas = tool_schemas()
    assert [s["function"]["name"] for s in schemas] == ["move", "update_notepad", "declare_found", "declare_done"]
    move = schemas[0]
    assert move["type"] == "function"
    assert move["function"]["parameters"]["properties"]["steps"] == {"type": "integer", "minimum": 1, "maximum": 4}
    assert move["function"]["parameters"]["required"] == ["direction", "steps"]
