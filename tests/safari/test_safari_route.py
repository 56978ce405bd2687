"""The route lesson (route.py): its answer is the tour's move knowing only the view, its rows ask it
before the view in the replies' own words, and they share their turn's view."""

from __future__ import annotations

import random

from localqwen_safari.episode import Episode
from localqwen_safari.missions import Mission, mission_for_seed
from localqwen_safari.policies import notepad_waypoint, tour, view_route
from localqwen_safari.route import route_answer, route_messages, route_question, route_questions
from localqwen_safari.tiny_training import tiny_rows

# water across the way right from (2, 2), open below it; the zebra far off
WALLED = (".....~..........", ".....~..........", ".....~..........", ".....~.....~....",
          "...............Z", "................")


def _episode(rows: tuple[str, ...] | list[str], start: tuple[int, int]) -> Episode:
    return Episode.start(Mission("m", "find-one", ("zebra",), map=tuple(rows), start=start))


def test_the_way_goes_round_water_in_view():
    walled = _episode(WALLED, (2, 2))
    # right is walled at col 5: the fewest-turns ways go down first, and the longest such move is 3
    assert view_route(walled, (2, 8)) == ("down", 3)
    assert view_route(_episode([row.replace("~", ".") for row in WALLED], (2, 2)), (2, 8)) == ("right", 4)
    assert view_route(walled, (2, 2)) is None  # no way to where it stands
    # walled in: no way at all
    assert view_route(_episode(["~~~.....", "~.~.....", "~~~....Z"], (1, 1)), (1, 6)) is None


def test_only_the_view_counts():
    # water at cols 9-11 lies beyond the view (cols -2..7 from (2, 2)): the way is straight on
    beyond = ["." * 9 + "~~~" + "...."] * 3 + ["." * 9 + "~" + "." * 6, "." * 15 + "Z", "." * 16]
    episode = _episode(beyond, (2, 2))
    assert max(col for _, col in episode.view_cells()) == 7
    assert view_route(episode, (2, 13)) == ("right", 4)


def test_it_is_the_tours_move_where_the_tour_knows_no_more_than_the_view():
    # on the tour's first turn nothing was seen before the view: if it explores, its move is the route
    checked = 0
    for seed in range(1000, 1010):
        episode = Episode.start(mission_for_seed("find-one", seed))
        decision = tour(episode)
        if not decision.situation.startswith("explore"):
            continue
        notepad = next(args["text"] for name, args in decision.calls if name == "update_notepad")
        waypoint = notepad_waypoint(notepad)
        assert waypoint is not None
        move = next(args for name, args in decision.calls if name == "move")
        assert view_route(episode, waypoint) == (move["direction"], move["steps"])
        checked += 1
    assert checked >= 5


def test_questions_and_answers_read_like_the_replies():
    assert route_question((5, 5), (11, 10)) == "Way to 6 down 5 right?"
    assert route_question((5, 5), (2, 5)) == "Way to 3 up?"
    assert route_answer(("right", 4)) == "I move right 4 steps." and route_answer(("up", 1)) == "I move up 1 step."
    messages = route_messages("view.png", "Way to 3 up?", "I move up 3 steps.")
    assert [part["type"] for part in messages[1]["content"]] == ["text", "image"]  # the question before the view
    assert messages[-1] == {"role": "assistant", "content": "I move up 3 steps."}
    assert len(route_messages("view.png", "Way to 3 up?")) == 2  # the question alone, to ask a model


def test_questions_are_random_goals_with_a_way_and_the_same_for_the_same_seed():
    episode = Episode.start(mission_for_seed("find-two", 1003))
    pairs = route_questions(episode, random.Random("r"), 6)
    assert pairs == route_questions(episode, random.Random("r"), 6) and 1 <= len(pairs) <= 6
    assert len({question for question, _ in pairs}) == len(pairs)
    for question, answer in pairs:
        assert question.startswith("Way to ") and answer.startswith("I move ")


def test_route_rows_come_with_the_turns_and_share_their_views():
    routes: list = []
    rows = tiny_rows(3, seed_start=1000, teacher="tour", routes=routes, route_questions=2)
    assert rows == tiny_rows(3, seed_start=1000, teacher="tour")  # the teacher's rows are unchanged
    assert len(rows) < len(routes) <= 2 * len(rows)
    views = {id(row.view) for row in rows}
    assert all(id(route.view) in views and route.marks == [] and route.situation == "route" for route in routes)
    assert all(route.messages[1]["content"][0]["text"].startswith("Way to ") for route in routes)
