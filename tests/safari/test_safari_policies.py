"""The scripted policies: the expert's Thought matches its moves, it keeps a notepad, it uses
only what it has seen, and it remembers sightings through its notepad."""

from __future__ import annotations

import dataclasses

import pytest
from localqwen_safari.episode import Episode
from localqwen_safari.missions import Mission, mission_for_seed
from localqwen_safari.playing import play_turns
from localqwen_safari.policies import (
    POLICIES,
    SITUATIONS,
    SITUATIONS_MET,
    Decision,
    compass,
    expert,
    notepad_route,
    notepad_sightings,
    notepad_sweep,
    notepad_waypoint,
    sweeper,
    thought_consistent,
    thought_moves,
    tour,
    tour_waypoints,
)
from localqwen_safari.world import Animal, World


def test_thought_parser_and_consistency():
    assert thought_moves("The lion is 3 rows down. I move down 3 steps towards it.") == [("down", 3)]
    assert thought_moves("I move left 1 step.") == [("left", 1)]
    assert thought_consistent(Decision("I move up 2 steps.", [("move", {"direction": "up", "steps": 2})]))
    assert not thought_consistent(Decision("I move up 2 steps.", [("move", {"direction": "up", "steps": 3})]))
    assert not thought_consistent(Decision("I move up 2 steps.", [("move", {"direction": "left", "steps": 2})]))
    assert not thought_consistent(Decision("I look around.", [("move", {"direction": "up", "steps": 1})]))
    assert not thought_consistent(Decision("I look around.", []))  # a wasted turn is not consistent
    assert thought_consistent(Decision("It is next to me, so I declare it found.",
                                       [("declare_found", {"species": "lion"})]))


@pytest.mark.parametrize("teacher", [expert, sweeper, tour, compass], ids=["expert", "sweeper", "tour", "compass"])
def test_expert_thought_states_its_move_and_notepad_holds_sightings(teacher):
    moves = 0
    for seed in range(2000, 2030):
        episode = Episode.start(mission_for_seed("find-two", seed))
        for turn in play_turns(episode, teacher):
            decision = turn.decision
            assert thought_consistent(decision), decision
            for name, args in decision.calls:
                if name == "move":
                    moves += 1
                    assert f"I move {args['direction']} {args['steps']} step" in decision.thought
            assert turn.runs and all(run.ok for run in turn.runs), turn.runs
        # every animal the notepad lists is really there, and it lists what the expert saw
        for species, cell in notepad_sightings(episode.notepad):
            assert any(a.species == species and a.cell == cell for a in episode.world.animals)
            assert cell in episode.seen
    assert moves > 300


def test_expert_ignores_what_it_has_not_seen():
    episode = Episode.start(mission_for_seed("find-one", 4))
    for _ in range(3):
        episode.play_turn(expert(episode).calls)
    before = expert(episode)
    # move every unseen animal somewhere else unseen: the expert's decision must not change
    world = episode.world
    unseen_land = [(r, c) for r in range(32) for c in range(32)
                   if (r, c) not in episode.seen and world.ground((r, c)) == "." and not world.animal_at((r, c))]
    moved = [a if a.cell in episode.seen else Animal(a.species, *unseen_land[-1 - i])
             for i, a in enumerate(world.animals)]
    assert moved != world.animals
    other = dataclasses.replace(episode, world=World(list(world.terrain), moved, world.start), seen=set(episode.seen))
    assert expert(other) == before


def test_expert_walks_to_a_sighting_remembered_in_its_notepad():
    rows = ["." * 20 for _ in range(20)]
    rows[2] = "Z" + "." * 19
    mission = Mission("memory", "find-one", ("zebra",), map=tuple(rows), start=(15, 15))
    episode = Episode.start(mission)
    assert expert(episode).calls[-1][0] == "move"
    assert "I have not seen a zebra yet" in expert(episode).thought  # out of view: it does not know yet
    first = expert(episode)
    assert first.situation == "explore (new goal)"
    # the goal and the moves left to it go on the notepad (a goal is at least two turns away), and
    # the next turn takes the route's first move and writes the rest
    [(name, args)] = [call for call in first.calls if call[0] == "update_notepad"]
    goal, route = notepad_route(args["text"])
    assert goal is not None and route and f"({goal[0]}, {goal[1]})" in first.thought
    after = Episode.start(mission)
    after.play_turn(first.calls)
    follow = expert(after)
    assert follow.situation == "explore (noted route)" and "I follow the route in my notepad" in follow.thought
    assert follow.action() == [("move", {"direction": route[0][0], "steps": route[0][1]})]
    written = next((a["text"] for n, a in follow.calls if n == "update_notepad"), after.notepad)
    assert notepad_route(written) == ((goal, route[1:]) if len(route) > 1 else (None, []))
    # a player that strayed from the route goes on to the same goal another way
    strayed = Episode.start(mission)
    strayed.notepad = args["text"]
    off = next(d for d in ("up", "down", "left", "right") if d != route[0][0])
    strayed.play_turn([("move", {"direction": off, "steps": 1})])
    again = expert(strayed)
    assert again.situation in ("explore (noted goal)", "explore (noted route)")  # not a new goal
    kept = next((a["text"] for n, a in again.calls if n == "update_notepad"), strayed.notepad)
    assert notepad_route(kept)[0] in (goal, None)  # None: the goal is one move away, the route ends
    assert notepad_route("Seen: lion at (2, 3). Route to (9, 4): up 4, left 1.") == ((9, 4), [("up", 4), ("left", 1)])
    assert notepad_route("Route to (1, 2): north 2.") == (None, [])
    episode.notepad = "Seen: zebra at (2, 0)."
    decision = expert(episode)
    assert "remembered from my notepad" in decision.thought and decision.situation == "target remembered"
    [(name, args)] = decision.calls
    assert name == "move" and args["direction"] in ("up", "left") and args["steps"] == 4
    # it reaches and finds it from memory alone
    while not episode.done:
        episode.play_turn(expert(episode).calls)
    assert episode.success and episode.turn <= 10


def test_baselines_play_whole_episodes_with_valid_calls():
    for name in ("greedy", "random"):
        episode = Episode.start(mission_for_seed("find-one", 3))
        turns = list(play_turns(episode, POLICIES[name]))
        assert episode.done and 1 <= len(turns) <= 25
        assert all(thought_consistent(turn.decision) for turn in turns)


def test_the_sweeper_sweeps_in_rows_written_on_its_notepad():
    rows = ["." * 24 for _ in range(24)]
    rows[22] = "." * 22 + "Z."
    episode = Episode.start(Mission("sweep", "find-one", ("zebra",), map=tuple(rows), start=(3, 3)))
    lines, moves = [], []
    for turn in play_turns(episode, sweeper):
        lines.append(notepad_sweep(episode.notepad))
        moves += [(args["direction"], args["steps"]) for name, args in turn.decision.calls if name == "move"]
    # from the top left: right to where the view shows the edge, down twice, back left, down twice...
    assert lines[:4] == ["Sweep right, shift down."] * 4
    assert moves[:4] == [("right", 4)] * 4  # to col 19, where the view shows the edge (col 24)
    assert lines[4] == "Sweep left, shift down again." and moves[4] == ("down", 4)
    assert lines[5] == "Sweep left, shift down." and moves[5] == ("down", 4) and moves[6] == ("left", 4)
    assert lines[10] == "Sweep right, shift down again." and moves[10] == ("down", 4)
    assert episode.success  # it swept down to the zebra in the bottom right corner


@pytest.mark.parametrize("teacher", [sweeper, tour, compass], ids=["sweeper", "tour", "compass"])
def test_the_sweepers_and_the_tours_exploring_rests_on_one_turn_only(teacher):
    """Forget every cell it saw before this turn: an exploring decision stays the same (the expert's
    new goals would change: they rest on all it has seen). For the tour, the waypoint it writes stays
    the same; its move may not, where the way round water crosses ground it saw earlier. The compass's
    move reads the view alone, so all of its decision stays."""
    checked = 0
    for seed in range(3000, 3010):
        episode = Episode.start(mission_for_seed("find-two", seed))
        while not episode.done:
            decision = teacher(episode)
            if decision.situation.startswith("explore"):
                amnesiac = dataclasses.replace(episode, seen=set(episode.view_cells()))
                if teacher is tour:  # the next waypoint is the round's, whatever was seen
                    assert notepad_of(teacher(amnesiac)) == notepad_of(decision)
                else:
                    assert teacher(amnesiac) == decision
                checked += 1
            episode.play_turn(decision.calls)
    assert checked > 100


def notepad_of(decision: Decision) -> str:
    return next((args["text"] for name, args in decision.calls if name == "update_notepad"), "")


def test_the_tours_round_covers_the_map_and_closes_on_itself():
    for size in [(32, 32), (24, 40), (12, 12), (6, 9)]:
        round_ = tour_waypoints(size)
        assert len(set(round_)) == len(round_)
        # every cell of the map is in the view from some waypoint (4 up/left, 5 down/right)
        covered = {(r, c) for wr, wc in round_ for r in range(wr - 4, wr + 6) for c in range(wc - 4, wc + 6)}
        assert all((r, c) in covered for r in range(size[0]) for c in range(size[1])), size
    round_ = tour_waypoints((32, 32))
    assert len(round_) == 16 and round_[0] == (4, 4)
    # one lane's gap between neighbours, the last one beside the first (the round starts anywhere)
    for a, b in zip(round_, round_[1:] + round_[:1], strict=True):
        assert (a[0] == b[0]) != (a[1] == b[1]) and abs(a[0] - b[0]) + abs(a[1] - b[1]) <= 8


def test_the_tour_walks_its_round_written_on_its_notepad():
    rows = ["." * 32 for _ in range(32)]
    rows[29] = "." * 4 + "Z" + "." * 27
    episode = Episode.start(Mission("tour", "find-one", ("zebra",), map=tuple(rows), start=(5, 2)))
    waypoints = []
    for turn in play_turns(episode, tour):
        waypoint = notepad_waypoint(episode.notepad)
        if waypoint and (not waypoints or waypoints[-1] != waypoint):
            waypoints.append(waypoint)
        if turn.decision.situation.startswith("explore"):
            assert "My waypoint is" in turn.decision.thought
    # from the nearest waypoint, (4, 4): it is near enough, so on to (4, 11), along the top lane...
    round_ = tour_waypoints((32, 32))
    assert waypoints[:4] == round_[1:5]
    assert episode.success  # ... and round to the zebra near the bottom left waypoint, (26, 4)


def test_the_tour_goes_on_past_one_reached_waypoint_a_turn_and_breaks_ties_the_farther_way():
    open_map = tuple("." * 32 for _ in range(31)) + ("Z" + "." * 31,)
    # at (9, 22) both (11, 26) and the round's next, (11, 19), are within reach: it leaves (11, 26)
    # and heads for (11, 19), whose "reached" the next turn's context shows
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=open_map, start=(9, 22)))
    episode.notepad = "Waypoint (11, 26)."
    decision = tour(episode)
    assert decision.calls[0] == ("update_notepad", {"text": "Waypoint (11, 19)."})
    assert "I am at my waypoint (11, 26), so I go on to the next, (11, 19)." in decision.thought
    episode.play_turn(decision.calls)
    assert "Waypoint (11, 19) [reached]." in episode.compact_context()
    assert notepad_waypoint(tour(episode).calls[0][1]["text"]) == (11, 11)
    # 4 up and 13 right with every way open: up 4 and right 4 tie (five turns either way, four
    # steps); the farther way, right, goes first (a fixed order put up first)
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=open_map, start=(8, 6)))
    episode.notepad = "Waypoint (4, 19)."
    assert tour(episode).calls[-1] == ("move", {"direction": "right", "steps": 4})



@pytest.mark.parametrize("name", ["expert", "sweeper", "tour", "compass"])
def test_each_teacher_meets_the_situations_it_is_said_to(name):
    met = set()
    for seed in range(1000, 1060):
        episode = Episode.start(mission_for_seed("find-two" if seed % 2 else "find-one", seed))
        met |= {turn.decision.situation for turn in play_turns(episode, POLICIES[name])}
    assert met == set(SITUATIONS_MET[name]) and met <= set(SITUATIONS)


def test_the_compass_reads_its_move_off_the_bearing_the_view_and_the_last_move():
    rows = ["." * 32 for _ in range(31)] + ["Z" + "." * 31]
    # 4 up and 13 right, every way open: the farther way, as far as open (the tour's move too)
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=tuple(rows), start=(8, 6)))
    episode.notepad = "Waypoint (4, 19)."
    assert compass(episode).calls[-1] == ("move", {"direction": "right", "steps": 4})
    # water right beside it: the other way of the bearing, as many steps as the waypoint lies that way
    rows[6] = "......." + "~" + "." * 24
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=tuple(rows), start=(6, 6)))
    episode.notepad = "Waypoint (4, 19)."
    decision = compass(episode)
    assert decision.calls[-1] == ("move", {"direction": "up", "steps": 2}) and thought_consistent(decision)
    # the same after a move down: up would undo it, so it sidesteps down, as far as open
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=tuple(rows), start=(5, 6)))
    episode.play_turn([("move", {"direction": "down", "steps": 1})])
    episode.notepad = "Waypoint (4, 19)."
    assert episode.position == (6, 6)
    assert compass(episode).calls[-1] == ("move", {"direction": "down", "steps": 4})


def test_the_compass_takes_a_long_move_before_a_short_one_along_the_bearing():
    rows = ["." * 32 for _ in range(31)] + ["Z" + "." * 31]
    rows[8] = "." * 8 + "~" + "." * 23  # one step open to the right, the way the waypoint lies farther
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=tuple(rows), start=(8, 6)))
    episode.notepad = "Waypoint (4, 19)."  # 4 up 13 right
    decision = compass(episode)
    assert decision.calls[-1] == ("move", {"direction": "up", "steps": 4}) and thought_consistent(decision)
    rows[4] = "." * 6 + "~" + "." * 25  # up open 3 now: still a long move, so still up
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=tuple(rows), start=(8, 6)))
    episode.notepad = "Waypoint (4, 19)."
    assert compass(episode).calls[-1] == ("move", {"direction": "up", "steps": 3})


def test_the_compass_asks_whether_a_waypoint_is_reachable_as_the_turn_search_answers():
    # the compass's cheap reachability (single steps) against the turn search it stands in for, from
    # every waypoint of the round (some on water or rock: the search spreads from them all the same)
    from localqwen_safari.policies import _connected, _turn_search

    checked = 0
    for seed in range(6):
        episode = Episode.start(mission_for_seed("find-two", 300 + seed))
        for turn in play_turns(episode, compass):
            for waypoint in tour_waypoints(episode.world.size):
                if waypoint == episode.position:
                    continue
                reached = episode.position in _turn_search(episode, optimistic=True, start=waypoint)
                assert _connected(episode, waypoint, episode.position) == reached, (seed, turn.turn, waypoint)
                checked += 1
    assert checked > 1000
    # walled in by water it has seen: no waypoint is reachable, and both say so
    rows = ["." * 32 for _ in range(32)]
    for r in range(12, 19):
        rows[r] = "." * 12 + ("~~~~~~~" if r in (12, 18) else "~.....~") + "." * 13
    rows[30] = "Z" + "." * 31
    episode = Episode.start(Mission("pocket", "find-one", ("zebra",), map=tuple(rows), start=(15, 15)))
    for waypoint in tour_waypoints(episode.world.size):
        assert not _connected(episode, waypoint, episode.position)
        assert episode.position not in _turn_search(episode, optimistic=True, start=waypoint)
