"""Slips (slips.py): the teacher's episodes with a learner's mistakes played in; the rows keep the
teacher's decisions, so a model sees how to recover from states the teacher never reaches."""

from __future__ import annotations

import random

import pytest
from localqwen_safari.episode import Episode
from localqwen_safari.missions import Mission
from localqwen_safari.policies import Decision, tour
from localqwen_safari.slips import push_move, slip_move, slipping, with_slip
from localqwen_safari.tiny_training import tiny_rows


def _lane(notepad: str = "") -> Episode:
    """A 12x12 map with a pond right of the agent at (5, 5); a zebra far away."""
    rows = ["." * 12 for _ in range(12)]
    rows[5] = "......~~~..."
    rows[11] = "...........Z"
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=tuple(rows), start=(5, 5)))
    episode.notepad = notepad
    return episode


def test_a_push_goes_four_steps_along_the_waypoints_farther_axis_whatever_is_in_the_way():
    episode = _lane("Waypoint (4, 11).")  # 1 up, 6 right: the pond is in the way
    assert push_move(episode) == ("right", 4)
    episode.play_turn([("move", {"direction": "right", "steps": 4})])
    assert episode.position == (5, 5) and "moved right 0 of 4 steps" in episode.last_runs[0].result
    assert push_move(_lane("Waypoint (11, 6).")) == ("down", 4)
    assert push_move(_lane()) is None  # no waypoint noted


def test_every_kind_of_slip_is_drawn_and_a_back_undoes_the_last_move():
    episode = _lane("Waypoint (4, 11).")
    episode.play_turn([("move", {"direction": "up", "steps": 2})])
    moves = [slip_move(episode, random.Random(seed)) for seed in range(60)]
    assert ("right", 4) in moves  # a push
    assert any(direction == "down" for direction, _ in moves)  # the last move undone
    assert all(direction in ("up", "down", "left", "right") and 1 <= steps <= 4 for direction, steps in moves)
    assert [slip_move(episode, random.Random(7)) for _ in range(3)] == [slip_move(episode, random.Random(7))] * 3


def test_a_slip_replaces_only_the_move():
    decision = Decision("I move up 2 steps.", [("update_notepad", {"text": "Waypoint (4, 11)."}),
                                               ("move", {"direction": "up", "steps": 2})], "explore (waypoint on)")
    slipped = with_slip(decision, ("left", 3))
    assert slipped.calls == [("update_notepad", {"text": "Waypoint (4, 11)."}),
                             ("move", {"direction": "left", "steps": 3})]
    assert decision.calls[1] == ("move", {"direction": "up", "steps": 2})  # the label is untouched


def test_slipping_plays_slips_on_exploring_turns_only_and_labels_every_turn_with_the_teacher():
    labels: list[Decision] = []
    policy = slipping(tour, 0.99, labels, lambda episode: random.Random(1))
    episode = _lane()
    played = policy(episode)
    assert labels == [tour(episode)] and labels[0].situation.startswith("explore")
    draw = random.Random(1)
    assert draw.random() < 0.99  # so this turn slips, and the slip is the next draw's
    assert played == with_slip(labels[0], slip_move(episode, draw))
    assert slipping(tour, 0.0, labels, lambda episode: random.Random(1))(episode) == tour(episode)
    with pytest.raises(ValueError, match=r"slip rate must be in \[0, 1\)"):
        slipping(tour, 1.0, labels, lambda episode: random.Random(1))
    # a turn with the target in view is never slipped
    beside = Episode.start(Mission("n", "find-one", ("zebra",), map=("....", ".Z..", "...."), start=(1, 0)))
    labels.clear()
    assert policy(beside) == labels[0] and not labels[0].situation.startswith("explore")


def test_rows_with_slips_hold_recoveries_labelled_by_the_teacher_and_are_the_same_each_time():
    plain = tiny_rows(20, seed_start=900, teacher="tour")
    slipped = tiny_rows(20, seed_start=900, teacher="tour", slips=0.3)
    assert not any("stopped by" in str(row.messages[1]) for row in plain)  # the teacher never walks into the way
    recoveries = [row for row in slipped if "stopped by" in str(row.messages[1])]
    assert recoveries  # a slip walked into water, rock, an animal or the edge, and the next row says so
    # every label is the teacher's own decision on that state: its Thought states the move its call makes
    from localqwen_safari.policies import thought_moves

    for row in slipped:
        reply = row.messages[2]
        moves = [call["function"]["arguments"] for call in reply["tool_calls"] if call["function"]["name"] == "move"]
        assert thought_moves(reply["content"]) == [(move["direction"], move["steps"]) for move in moves]
    again = tiny_rows(20, seed_start=900, teacher="tour", slips=0.3)
    assert [row.messages for row in again] == [row.messages for row in slipped]
