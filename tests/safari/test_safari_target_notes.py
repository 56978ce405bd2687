"""The compass's notes: targets written as the view shows them, checked by sight, walked back to by
the bearing the context shows (policies.target_notes, policies._go_by_notes)."""

from __future__ import annotations

from localqwen_safari.dagger import expert_label
from localqwen_safari.episode import Episode
from localqwen_safari.missions import Mission, mission_for_seed
from localqwen_safari.playing import play_turns
from localqwen_safari.policies import beside, compass, notepad_sightings, target_notes


def open_map(animals: dict[tuple[int, int], str], size: int = 20) -> tuple[str, ...]:
    rows = [["."] * size for _ in range(size)]
    for (r, c), letter in animals.items():
        rows[r][c] = letter
    return tuple("".join(row) for row in rows)


def test_a_target_in_view_is_noted_as_the_view_shows_it_and_other_species_are_not():
    # a zebra (the second target) 2 rows down and 3 cols right, a giraffe (no target) in view
    mission = Mission("m", "find-two", ("lion", "zebra"), map=open_map({(12, 13): "Z", (8, 8): "G"}), start=(10, 10))
    episode = Episode.start(mission)
    assert target_notes(episode) == ("Seen: zebra 2 down 3 right.", {"zebra": (12, 13)})
    decision = compass(episode)
    name, arguments = decision.calls[0]
    assert name == "update_notepad" and arguments["text"].startswith("Seen: zebra 2 down 3 right.")  # then its waypoint
    episode.play_turn(decision.calls)
    assert notepad_sightings(episode.notepad) == [("zebra", (12, 13))]  # the notepad pinned it to its cell
    # noted once: while the cell stays the same, the note is copied as stored and not rewritten
    notes, _ = target_notes(episode)
    assert notes == "Seen: zebra at (12, 13)."
    assert "Seen: zebra at (12, 13) [" in episode.compact_context()  # its bearing, beside it


def test_a_note_the_view_shows_wrong_is_struck_and_nothing_is_declared():
    # the notepad says a zebra is beside the agent; the view shows none there (the zebra is far off)
    mission = Mission("m", "find-one", ("zebra",), map=open_map({(19, 0): "Z"}), start=(2, 10))
    episode = Episode.start(mission)
    episode.notepad = "Seen: zebra at (3, 11)."
    assert target_notes(episode) == ("", {})
    decision = compass(episode)
    name, arguments = decision.calls[0]
    assert name == "update_notepad" and "zebra" not in arguments["text"]
    assert "declare_found" not in [name for name, _ in decision.calls]
    assert decision.situation.startswith("explore")
    # its DAgger label is its decision on the notepad as written (it checks the notes itself)
    assert expert_label(episode, compass) == decision


def test_a_noted_target_out_of_view_is_walked_to_by_its_bearing_and_found():
    mission = Mission("m", "find-one", ("zebra",), map=open_map({(1, 12): "Z"}), start=(15, 10))
    episode = Episode.start(mission)
    episode.notepad = "Seen: zebra 14 up 2 right."  # as a player writes it: the notepad pins it
    episode.play_turn([("update_notepad", {"text": episode.notepad})])
    assert "zebra at (1, 12) [14 up 2 right]" in episode.compact_context()
    decision = compass(episode)
    assert decision.situation == "target remembered" and "remembered from my notepad" in decision.thought
    assert decision.action() == [("move", {"direction": "up", "steps": 4})]
    turns = list(play_turns(episode, compass))
    assert episode.success and len(turns) <= 7  # 13 rows up, 4 a turn, then beside it, declare, done
    assert [turn.decision.situation for turn in turns[-2:]] == ["declare", "finish"]


def test_a_found_targets_note_is_dropped_and_the_waypoint_kept():
    mission = Mission("m", "find-two", ("lion", "zebra"), map=open_map({(10, 11): "L", (0, 19): "Z"}), start=(10, 10))
    episode = Episode.start(mission)
    episode.play_turn([("update_notepad", {"text": "Seen: lion 1 right. Waypoint (4, 4)."}),
                       ("declare_found", {"species": "lion"})])
    assert episode.found == ["lion"]
    decision = compass(episode)
    written = next(arguments["text"] for name, arguments in decision.calls if name == "update_notepad")
    assert "lion" not in written and "Waypoint (" in written


def test_the_cell_beside_a_target():
    assert beside((10, 10), (1, 12)) == (2, 11)
    assert beside((10, 10), (10, 4)) == (10, 5)
    assert beside((10, 10), (13, 10)) == (12, 10)


def test_the_compass_notes_only_real_targets_in_its_own_episodes():
    for seed in range(2000, 2020):
        episode = Episode.start(mission_for_seed("find-two", seed))
        for turn in play_turns(episode, compass):
            for species, cell in notepad_sightings(episode.notepad):
                assert species in episode.mission.targets and species not in episode.found[:-1]
                assert any(a.species == species and a.cell == cell for a in episode.world.animals)
            assert turn.decision.situation != "declare" or any(
                species == episode.mission.targets[len(episode.found) - 1] for species, _ in turn.animals_in_view)
