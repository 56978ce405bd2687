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
    assert view_route(walled, (2, 40)) is None  # nor off the map
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


# -- the route asked at play ----------------------------------------------------------------------
def _with_notepad(notepad: str, start: tuple[int, int] = (2, 2), targets: tuple[str, ...] = ("zebra",)) -> Episode:
    size = 32
    rows = ["." * size for _ in range(size)]
    rows[20] = "." * 20 + "Z" + "." * 11
    rows[25] = "." * 5 + "L" + "." * 26
    episode = Episode.start(Mission("m", "find-two" if len(targets) == 2 else "find-one", targets,
                                    map=tuple(rows), start=start))
    episode.notepad = notepad
    return episode


def test_the_route_is_asked_for_the_place_the_notepad_heads_for():
    from localqwen_safari.policies import tour_waypoints
    from localqwen_safari.route import route_goal, true_route_line

    round_ = tour_waypoints((32, 32))
    assert route_goal(_with_notepad("")) is None  # nothing noted: nothing to ask
    far = round_[5]
    assert route_goal(_with_notepad(f"Waypoint ({far[0]}, {far[1]}).")) == far
    # within reach of the noted waypoint: the round's next one, as the tour goes on
    assert route_goal(_with_notepad(f"Waypoint ({round_[0][0]}, {round_[0][1]}).", start=round_[0])) == round_[1]
    # the waypoint, never a noted sighting (the target's place is read off the view)
    noted = "Seen: zebra at (20, 20); zebra at (6, 3); lion at (3, 3). Waypoint (4, 11)."
    assert route_goal(_with_notepad(noted)) == (4, 11)
    assert route_goal(_with_notepad("Seen: zebra at (6, 3).")) is None
    # a waypoint a model noted off the map asks nothing (and has no route: found by a bench run's DAgger round)
    off_map = _with_notepad("Waypoint (40, 12).")
    assert route_goal(off_map) is None and true_route_line(off_map) == ""
    finished = _with_notepad(noted)
    finished.found.append("zebra")
    assert route_goal(finished) is None  # every target found


def test_a_route_answer_becomes_a_context_line_and_garble_adds_nothing():
    from localqwen_safari.route import route_line, with_route

    assert route_line((5, 5), (11, 10), "I move right 4 steps.") == "Way to 6 down 5 right: I move right 4 steps."
    assert route_line((5, 5), (2, 5), " I move up 1 step. I move") == "Way to 3 up: I move up 1 step."
    for garbled in ("", "I move right", "I move right 9 steps.", "I move up 2 steps. I move left 1 step.", "Way to"):
        assert route_line((5, 5), (2, 5), garbled) == ""
    context = "find-one: zebra. Turn 2/25.\nNotepad: Waypoint (4, 11).\nFind: zebra."
    assert with_route(context, "Way to 3 up: I move up 3 steps.").splitlines()[-2:] == \
        ["Way to 3 up: I move up 3 steps.", "Find: zebra."]  # the species asked stays right before the view
    assert with_route(context, "") == context


def test_reply_rows_hold_the_route_a_perfect_answer_gives():
    from localqwen_safari.route import true_route_line

    plain = tiny_rows(3, seed_start=1000, teacher="tour")
    routed = tiny_rows(3, seed_start=1000, teacher="tour", ask_route=True)
    assert len(plain) == len(routed)
    with_line = 0
    for before, after in zip(plain, routed, strict=True):
        text, text_after = before.messages[1]["content"][0]["text"], after.messages[1]["content"][0]["text"]
        assert after.messages[-1] == before.messages[-1] and after.marks == before.marks  # the reply is the teacher's
        extra = [line for line in text_after.splitlines() if line not in text.splitlines()]
        assert len(extra) <= 1 and text_after.splitlines()[-1] == text.splitlines()[-1]
        with_line += len(extra)
    assert with_line > len(plain) // 2  # the tour notes a waypoint from its first turn on
    episode = _with_notepad("Waypoint (4, 11).")
    assert true_route_line(episode) == f"Way to 2 down 9 right: {route_answer(view_route(episode, (4, 11)))}"
    assert true_route_line(_with_notepad("")) == ""


def test_generate_and_dagger_rows_hold_the_route_line(tmp_path):
    import json

    import pytest
    from localqwen_safari.dagger import labelled_turns
    from localqwen_safari.dataset import generate
    from localqwen_safari.policies import get_teacher

    stream = generate(tmp_path, 2, seed_start=700, prompt="compact", teacher="tour", route=True)
    for _ in stream:
        pass
    texts = [json.loads(line)["messages"][1]["content"][0]["text"]
             for line in (tmp_path / "conversations.jsonl").read_text().splitlines()]
    assert sum("\nWay to " in text for text in texts) > len(texts) // 2
    with pytest.raises(ValueError, match="compact"):
        next(generate(tmp_path / "full", 1, prompt="full", route=True))

    class Still:  # a learner that only writes a waypoint far off: its states are labelled by the tour
        def decide(self, episodes):
            from localqwen_safari.policies import Decision
            return [Decision("I wait.", [("update_notepad", {"text": "Waypoint (25, 25)."})]) for _ in episodes]

    turns, _ = next(labelled_turns(Still(), [mission_for_seed("find-one", 5)], teacher=get_teacher("tour"), route=True))
    assert "Way to " not in turns[0][1].compact_context  # nothing noted on the first turn
    assert turns[1][1].compact_context.splitlines()[-2].startswith("Way to ")


def test_a_routing_policy_asks_the_way_before_its_reply(tiny_qwen3_vl_path, tiny_qwen3_path, tmp_path, recording):
    """Random weights: the answers are noise (most state no single move, so add no line); what is
    tested is who is asked what, and that the reply's context is the one model_messages builds."""
    import pytest
    from localqwen_safari.model_policy import ModelPolicy, model_messages

    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    with TransformersEngine(tiny_qwen3_vl_path) as real:
        engine = recording(real)
        policy = ModelPolicy(engine, tmp_path, settings=GenerationSettings(max_new_tokens=8), prompt="compact",
                             route=True)
        episodes = [_with_notepad("Waypoint (4, 11)."), _with_notepad(""), _with_notepad("Waypoint (12, 4).")]
        assert len(policy.decide(episodes)) == 3
        asked, replied = engine.asked
        assert [conversation[1]["content"][0]["text"] for conversation in asked] == \
            ["Way to 2 down 9 right?", "Way to 10 down 2 right?"]  # the episode with nothing noted is not asked
        assert len(policy.routes) == 3 and policy.routes[1] == ""
        for episode, route, conversation in zip(episodes, policy.routes, replied, strict=True):
            assert conversation == model_messages(episode, image=conversation[1]["content"][1]["image"],
                                                  prompt="compact", route=route)
        hidden = recording(real)
        ModelPolicy(hidden, tmp_path, settings=GenerationSettings(max_new_tokens=8), prompt="compact", route=True,
                    hide_notepad=True).decide(episodes[:1])
        assert len(hidden.asked) == 1  # a hidden notepad names no place to ask about
        with pytest.raises(ValueError, match="--prompt compact"):
            ModelPolicy(real, tmp_path, prompt="full", route=True)
    with TransformersEngine(tiny_qwen3_path) as text, pytest.raises(ValueError, match="vision model"):
        ModelPolicy(text, tmp_path, prompt="compact", route=True)
