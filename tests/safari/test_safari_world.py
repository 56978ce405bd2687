"""The world: seeded generation, hand-made maps, rendering, and replay determinism."""

from __future__ import annotations

import io

import pytest
from localqwen_safari.episode import Episode
from localqwen_safari.missions import mission_for_seed
from localqwen_safari.playing import play_turns
from localqwen_safari.policies import POLICIES
from localqwen_safari.render import render_map, render_view
from localqwen_safari.world import SPECIES, WATER, _reachable, generate_world, world_from_map


def test_generated_world_shape():
    for seed in range(20):
        world = generate_world(seed)
        assert world.size == (32, 32)
        assert 0.11 <= world.water_fraction() <= 0.13
        assert len(world.animals) == 6 and {a.species for a in world.animals} == set(SPECIES)
        assert len({a.cell for a in world.animals}) == 6
        reachable = _reachable(world.terrain, world.start)
        # every animal stands on land next to ground the start can reach
        for animal in world.animals:
            assert animal.cell in reachable


def test_same_seed_same_world_other_seed_other_world():
    assert generate_world(5) == generate_world(5)
    assert generate_world(5).terrain != generate_world(6).terrain


def test_hand_made_map():
    world = world_from_map(["..~Z", "#.L.", "E..G"], (0, 0))
    assert world.terrain == ["..~.", "#...", "...."]
    assert [(a.species, a.cell) for a in world.animals] == [
        ("zebra", (0, 3)), ("lion", (1, 2)), ("elephant", (2, 0)), ("giraffe", (2, 3))]
    assert world.ground((0, 2)) == WATER
    with pytest.raises(ValueError, match="row 1 has 3 cells"):
        world_from_map(["....", "..."], (0, 0))
    with pytest.raises(ValueError, match=r"row 0, column 1: unknown cell 'x'"):
        world_from_map([".x.."], (0, 0))
    with pytest.raises(ValueError, match="start .* is on water"):
        world_from_map(["~..."], (0, 0))
    with pytest.raises(ValueError, match="outside"):
        world_from_map(["...."], (3, 0))


def test_view_is_160_px_one_cell_per_16_px():
    from PIL import Image

    episode = Episode.start(mission_for_seed("find-one", 3))
    view = Image.open(io.BytesIO(render_view(episode)))
    assert view.size == (160, 160)
    row, col = episode.position
    # the agent's own cell (view row 4, col 4) is red in its middle; the cell to its right shows the map
    assert view.getpixel((4 * 16 + 8, 4 * 16 + 8)) == (220, 20, 20)
    right = view.getpixel((5 * 16 + 1, 4 * 16 + 1))
    expected = {".": (200, 180, 110), "~": (40, 90, 200), "#": (110, 110, 110)}
    if episode.world.inside((row, col + 1)):
        assert right in (expected[episode.world.ground((row, col + 1))], (30, 30, 30))
    assert Image.open(io.BytesIO(render_map(episode))).size == (256, 256)


def _replay(policy: str, seed: int):
    episode = Episode.start(mission_for_seed("find-two", seed))
    turns = list(play_turns(episode, POLICIES[policy], render=True))
    return ([t.view for t in turns], [t.context for t in turns], [t.decision.calls for t in turns],
            episode.path, render_map(episode))


@pytest.mark.parametrize("policy", ["expert", "greedy", "random"])
def test_same_seed_gives_byte_identical_images_and_trajectory(policy):
    first, second = _replay(policy, 11), _replay(policy, 11)
    assert first == second
    assert len(first[0]) >= 2 and all(image.startswith(b"\x89PNG") for image in first[0])
    assert _replay(policy, 12)[3] != first[3]
