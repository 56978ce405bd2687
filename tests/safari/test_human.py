"""A person's game (the session the TUI keys and web buttons drive): moves, declarations and a
notepad that rides along with the next turn; the game saves as a replayable episode."""

from __future__ import annotations

import pytest
from localqwen_safari.episode_file import load_episode
from localqwen_safari.human import HumanPlay
from localqwen_safari.missions import Mission
from localqwen_safari.replay import replay

MAP = ("......",
       ".Z..~.",
       "......",
       "....L.",
       "......")


def _game(max_turns=25):
    return HumanPlay(Mission("by-hand", "find-two", ("zebra", "lion"), map=MAP, start=(4, 0), max_turns=max_turns))


def test_play_a_find_two_by_hand_and_replay_it(tmp_path):
    game = _game()
    start = game.state()
    assert start.turn == 0 and start.position == (4, 0) and start.results == [] and len(start.view) > 100
    state = game.apply("found")  # too far: an error result, a turn spent, nothing found
    assert state.turn == 1 and state.found == [] and "no zebra within one cell" in state.results[0]
    state = game.apply("left")  # the edge stops it
    assert state.position == (4, 0) and "stopped by the edge of the map" in state.results[0]
    game.apply("up")
    state = game.apply("up")
    assert state.position == (2, 0)
    state = game.apply("found")
    assert state.found == ["zebra"] and state.results == ["declare_found(species=\"zebra\") -> found the zebra at "
                                                          "row 1, col 1"]
    state = game.apply("notepad", "lion somewhere right")  # no turn yet
    assert state.turn == 5 and state.pending_notepad == "lion somewhere right" and state.notepad == ""
    state = game.apply("right")
    assert state.turn == 6 and state.notepad == "lion somewhere right" and state.pending_notepad is None
    assert state.results[0].startswith("update_notepad(") and state.results[1].startswith("move(")
    game.apply("right")
    game.apply("right")
    state = game.apply("found")
    assert state.found == ["zebra", "lion"] and not state.done
    state = game.apply("done")
    assert state.done and state.outcome == "success" and "success" in state.status()
    with pytest.raises(ValueError, match="the mission is over"):
        game.apply("up")
    path = game.save(tmp_path / "human.jsonl")
    log = load_episode(path)
    assert log.policy == "human" and log.end == {"outcome": "success", "success": True, "turns": 10}
    frames = replay(log)
    assert [f.calls for f in frames] == [f.calls for f in game.frames]
    assert [f.view for f in frames] == [f.view for f in game.frames]


def test_out_of_turns_unknown_actions_and_early_saves():
    game = _game(max_turns=2)
    with pytest.raises(ValueError, match="unknown action 'jump'"):
        game.apply("jump")
    game.apply("up")
    with pytest.raises(ValueError, match="not over yet"):
        game.save("never.jsonl")
    state = game.apply("up")
    assert state.done and state.outcome == "out of turns"


def test_a_seeded_mission_starts_where_its_world_says_and_its_map_hides_what_was_not_seen():
    import io

    from localqwen_safari.render import COLOURS, MAP_CELL_PX
    from PIL import Image

    game = HumanPlay.for_seed("find-one", 7)
    state = game.state()
    assert state.position == game.episode.world.start and state.mission.startswith("Find the ")
    image = Image.open(io.BytesIO(state.map)).convert("RGB")
    centre = MAP_CELL_PX // 2
    shown = {animal.species: image.getpixel((animal.col * MAP_CELL_PX + centre, animal.row * MAP_CELL_PX + centre))
             for animal in game.episode.world.animals if animal.cell not in game.episode.seen}
    assert shown and set(shown.values()) == {COLOURS["unseen"]}  # no animal it has not seen gives itself away
