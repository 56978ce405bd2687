"""The openings (openings.py): how far each way is open, said in the compact Thought before the move."""

from __future__ import annotations

import copy

import pytest
from localqwen_safari.episode import Episode
from localqwen_safari.missions import Mission, mission_for_seed
from localqwen_safari.openings import open_ways, opening_sentence, said_opening, with_opening
from localqwen_safari.playing import play_turns
from localqwen_safari.policies import Decision, tour
from localqwen_safari.prompts import compact_thought
from localqwen_safari.tiny_training import shut_ahead, tiny_rows
from localqwen_safari.world import MOVES


def _pond() -> Episode:
    """A 12x12 map, the agent at (5, 5): a pond right of it, rock two rows up, a zebra three cols
    left, the map's edge six rows down."""
    rows = ["." * 12 for _ in range(12)]
    rows[3] = ".....#......"
    rows[5] = "..Z...~~~..."
    return Episode.start(Mission("m", "find-one", ("zebra",), map=tuple(rows), start=(5, 5)))


def test_the_openings_count_the_steps_to_water_rock_an_animal_or_at_most_four():
    episode = _pond()
    assert open_ways(episode) == {"up": 1, "down": 4, "left": 2, "right": 0}
    assert opening_sentence(open_ways(episode)) == "Open: up 1, down 4, left 2, right 0."
    assert said_opening(f"No zebra in view. {opening_sentence(open_ways(episode))} I move down 4 steps.") == \
        {"up": 1, "down": 4, "left": 2, "right": 0}
    assert said_opening("No zebra in view. I move down 4 steps.") is None
    assert said_opening("Open: up 1, down 4.") is None  # all four ways or none
    near_edge = Episode.start(Mission("e", "find-one", ("zebra",), map=("Z....", ".....", "....."), start=(1, 2)))
    assert open_ways(near_edge) == {"up": 1, "down": 1, "left": 2, "right": 2}


def test_a_move_walks_exactly_as_far_as_the_openings_say():
    """Said truthfully: on the tour's turns, four steps any way walk the opening's count, no more."""
    for seed in (3, 11):
        episode = Episode.start(mission_for_seed("find-two", seed))
        for _ in play_turns(episode, tour):
            if episode.done:
                break
            opening = open_ways(episode)
            for direction in MOVES:
                trial = copy.deepcopy(episode)
                before = trial.position
                trial.play_turn([("move", {"direction": direction, "steps": 4})])
                walked = abs(trial.position[0] - before[0]) + abs(trial.position[1] - before[1])
                assert walked == opening[direction], (seed, episode.turn, direction)


def test_the_tour_never_moves_further_than_its_openings():
    for seed in range(6):
        episode = Episode.start(mission_for_seed("find-one", seed))
        for turn in play_turns(episode, tour):
            opening = turn.ways_open
            for name, arguments in turn.decision.calls:
                if name == "move":
                    assert 1 <= arguments["steps"] <= opening[arguments["direction"]]


def test_with_openings_the_thought_says_them_after_the_targets_sentence():
    plain = tiny_rows(1, seed_start=700, teacher="tour")
    opened = tiny_rows(1, seed_start=700, teacher="tour", openings=True)
    assert len(plain) == len(opened)
    episode = Episode.start(mission_for_seed("find-one", 700))
    turns = list(play_turns(episode, tour))
    for row, with_open, turn in zip(plain, opened, turns, strict=True):
        assert with_open.messages[2]["content"].startswith(f"Thought: {with_opening(turn.lead, turn.opening)} ")
        assert "Open:" not in row.messages[2]["content"]
        assert with_open.messages[2]["content"].replace(f"{turn.opening} ", "", 1) == row.messages[2]["content"]
    assert compact_thought("I move up 2 steps.", with_opening("", opening_sentence(dict.fromkeys(MOVES, 2)))) == \
        "Open: up 2, down 2, left 2, right 2. I move up 2 steps."


def test_openings_are_written_only_into_the_compact_profile(tmp_path):
    from localqwen_safari.dataset import generate

    with pytest.raises(ValueError, match="compact"):
        next(generate(tmp_path, 1, prompt="full", openings=True))


def test_the_learning_bench_says_openings_only_in_the_tiny_loop():
    from bench_scripts import bench_script

    bench = bench_script("bench_safari_learning")
    assert not bench.parse_args(["--marking", "--merge", "1"]).openings  # as every measured run so far
    assert bench.parse_args(["--marking", "--merge", "1", "--openings"]).openings
    with pytest.raises(SystemExit):
        bench.parse_args(["--openings"])


def _first_turn(waypoint: str, situation: str = "explore (waypoint on)"):
    def policy(episode: Episode) -> Decision:
        return Decision("I move up 1 step.", [("update_notepad", {"text": waypoint}),
                                              ("move", {"direction": "up", "steps": 1})], situation)
    return next(play_turns(_pond(), policy))


def test_a_turn_is_shut_ahead_when_the_waypoints_farther_way_is_shut_beside_the_agent():
    assert shut_ahead(_first_turn("Waypoint (3, 11)."))  # 2 up, 6 right: right is shut by the pond
    assert not shut_ahead(_first_turn("Waypoint (11, 7)."))  # 6 down, 2 right: down is open
    assert not shut_ahead(_first_turn("Waypoint (1, 5)."))  # straight up: rock two rows up, 1 step open
    assert not shut_ahead(_first_turn("Waypoint (3, 11).", "target in view"))  # only the exploring turns


def test_shut_rows_are_drawn_as_often_as_asked():
    from localqwen_safari.tiny_training import teacher_pool

    rows = tiny_rows(12, seed_start=100_000, teacher="tour", openings=True)
    shut = [index for index, row in enumerate(rows) if row.shut]
    assert shut and len(shut) < len(rows) // 5
    assert all(rows[index].situation.startswith("explore") for index in shut)
    plain, drawn = teacher_pool(rows, 12), teacher_pool(rows, 12, 5)
    assert len(drawn) - len(plain) == 4 * len(shut)
    assert all(drawn.count(index) == 5 for index in shut)
