"""Shared by the Safari frontend tests: a seeded mission a person can walk by single steps."""

from __future__ import annotations

from collections import deque

import pytest


@pytest.fixture(scope="session")
def short_walk() -> tuple[int, list[str]]:
    """A find-one seed (of 0-39) whose target is a short walk away, and the single steps (up /
    down / left / right) that end within one cell of it, with turns left to declare."""
    from localqwen_safari.missions import mission_for_seed
    from localqwen_safari.world import MOVES

    for seed in range(40):
        mission = mission_for_seed("find-one", seed)
        world = mission.world()
        goals = {(a.row + dr, a.col + dc) for a in world.animals if a.species == mission.targets[0]
                 for dr in (-1, 0, 1) for dc in (-1, 0, 1)}
        previous: dict = {world.start: None}
        queue = deque([world.start])
        while queue:
            cell = queue.popleft()
            if cell in goals:
                steps = []
                while previous[cell] is not None:
                    cell, direction = previous[cell]
                    steps.append(direction)
                if len(steps) <= mission.max_turns - 3:
                    return seed, steps[::-1]
                break
            for direction, (dr, dc) in MOVES.items():
                nxt = (cell[0] + dr, cell[1] + dc)
                if nxt not in previous and world.blocker(nxt) is None:
                    previous[nxt] = (cell, direction)
                    queue.append(nxt)
    raise AssertionError("no seed of 0-39 with a short walk")


class _Recording:
    """A real engine, with the conversations it was asked kept for the test to read."""

    def __init__(self, engine):
        self.engine, self.asked = engine, []
        self.supports_images = engine.supports_images

    def chat_batch(self, conversations, **kwargs):
        self.asked.append(conversations)
        return self.engine.chat_batch(conversations, **kwargs)

    def chat(self, messages, **kwargs):
        self.asked.append([messages])
        return self.engine.chat(messages, **kwargs)


@pytest.fixture
def recording():
    """Wraps a real engine so a test can read what a policy asked it (``.asked``: each call's conversations)."""
    return _Recording
