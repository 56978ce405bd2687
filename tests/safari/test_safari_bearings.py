"""Sightings relative to the agent: the notepad pins them to map cells and shows their bearings."""

from __future__ import annotations

from localqwen_safari.bearings import (
    bearing,
    pin_sightings,
    waypoint_bearing,
    with_bearings,
    with_waypoint_bearing,
    within_reach,
)
from localqwen_safari.episode import Episode
from localqwen_safari.missions import Mission
from localqwen_safari.policies import expert, notepad_sightings, notepad_waypoint, tour


def test_relative_sightings_are_pinned_to_map_cells_and_the_rest_kept():
    assert pin_sightings("Seen: zebra 3 down 2 right; lion 4 up; giraffe 1 left.", (5, 13)) == \
        "Seen: zebra at (8, 15); lion at (1, 13); giraffe at (5, 12)."
    assert pin_sightings("zebra 2 down, 3 left", (5, 5)) == "zebra at (7, 2)"
    # Map cells stay, bearings copied back from the context are dropped, routes and prose are kept.
    text = "Seen: elephant at (2, 9) [3 up 4 right]. Route to (20, 14): down 4, right 2. Lion near water."
    assert pin_sightings(text, (5, 5)) == "Seen: elephant at (2, 9). Route to (20, 14): down 4, right 2. Lion near water."
    assert pin_sightings("a zebra herd, 3 zebras", (1, 1)) == "a zebra herd, 3 zebras"


def test_bearings_read_back_the_offset_from_where_the_agent_stands():
    assert bearing((5, 5), (8, 3)) == "3 down 2 left" and bearing((5, 5), (5, 9)) == "4 right"
    assert bearing((5, 5), (5, 5)) == "here"
    assert with_bearings("Seen: zebra at (8, 15); lion at (1, 13). Route to (9, 9): up 1.", (5, 13)) == \
        "Seen: zebra at (8, 15) [3 down 2 right]; lion at (1, 13) [4 up]. Route to (9, 9): up 1."
    for here, there in (((10, 10), (13, 8)), ((0, 31), (4, 27)), ((7, 7), (7, 3))):
        written = f"zebra {bearing(here, there)}"  # as a player writes it off the view
        assert notepad_sightings(pin_sightings(written, here)) == [("zebra", there)]


def test_a_player_writes_a_sighting_relative_to_itself_and_reads_its_bearing_next_turn():
    mission = Mission("m", "find-two", ("zebra", "lion"), map=("..........", "..........", ".......L..",
                                                                "..........", "..........", "..........",
                                                                "Z........."), start=(4, 4))
    episode = Episode.start(mission)
    episode.play_turn([("update_notepad", {"text": "Seen: zebra 2 down 4 left; lion 2 up 3 right."}),
                       ("move", {"direction": "down", "steps": 1})])
    assert episode.notepad == "Seen: zebra at (6, 0); lion at (2, 7)."  # pinned where it was written
    shown = "Notepad: Seen: zebra at (6, 0) [1 down 4 left]; lion at (2, 7) [3 up 3 right]."
    assert shown in episode.context_text() and shown in episode.compact_context()
    assert "(hidden)" in episode.context_text(show_notepad=False)
    # The expert writes map cells.
    name, arguments = expert(Episode.start(mission)).calls[0]
    assert name == "update_notepad" and arguments["text"] == "Seen: zebra at (6, 0); lion at (2, 7)."


def test_a_waypoint_shows_its_bearing_in_both_contexts_and_a_copied_bearing_is_not_stored():
    mission = Mission("m", "find-one", ("zebra",), map=tuple("." * 32 for _ in range(31)) + ("Z" + "." * 31,),
                      start=(20, 20))
    episode = Episode.start(mission)
    decision = tour(episode)
    episode.play_turn(decision.calls)
    waypoint = notepad_waypoint(episode.notepad)
    assert waypoint is not None
    shown = f"Waypoint ({waypoint[0]}, {waypoint[1]}) [{waypoint_bearing(episode.position, waypoint)}]."
    assert f"Notepad: {shown}" in episode.compact_context() and f"Notepad: {shown}" in episode.context_text()
    assert "Notepad: (hidden)" in episode.compact_context(show_notepad=False)
    assert with_waypoint_bearing("Seen: zebra at (8, 15). Waypoint (4, 11).", (15, 13)) == \
        "Seen: zebra at (8, 15). Waypoint (4, 11) [11 up 2 left]."  # sightings stay as written
    episode.play_turn([("update_notepad", {"text": shown})])  # a player copies the context back
    assert episode.notepad == f"Waypoint ({waypoint[0]}, {waypoint[1]})."


def test_a_waypoint_within_reach_shows_reached_in_place_of_its_bearing():
    # five cells or fewer in each axis is reached (the tour goes on from there); six is a bearing
    assert with_waypoint_bearing("Waypoint (4, 11).", (9, 6)) == "Waypoint (4, 11) [reached]."
    assert with_waypoint_bearing("Waypoint (4, 11).", (4, 11)) == "Waypoint (4, 11) [reached]."
    assert with_waypoint_bearing("Waypoint (4, 11).", (10, 11)) == "Waypoint (4, 11) [6 up]."
    assert with_waypoint_bearing("Waypoint (4, 11).", (4, 17)) == "Waypoint (4, 11) [6 left]."
    assert [within_reach((4, 11), (4 + d, 11 - d)) for d in (4, 5, 6)] == [True, True, False]
    # what the context shows is the same rule the tour goes on by
    episode = Episode.start(Mission("m", "find-one", ("zebra",), map=tuple("." * 32 for _ in range(31)) + ("Z" + "." * 31,),
                                    start=(20, 20)))
    reached_turns = 0
    for _ in range(12):
        waypoint = notepad_waypoint(episode.notepad)
        decision = tour(episode)
        if waypoint is not None and "reached" in episode.compact_context():
            reached_turns += 1
            assert decision.situation == "explore (waypoint next)"
            assert notepad_waypoint(decision.calls[0][1]["text"]) != waypoint
        elif waypoint is not None:
            assert decision.situation == "explore (waypoint on)"
        episode.play_turn(decision.calls)
    assert reached_turns >= 2  # the walk met the rule it checks
