"""Slips: the teacher's episodes with a learner's mistakes played in, so its rows show how to recover.

A model trained on a teacher's turns only ever sees the states the teacher reaches, and the teacher
never walks into water or back over its own path. The tiny model does both (docs/safari_learning.md,
"Where the exploring goes wrong, and slips"): in play 22% of its moves walked no step and 30% undid the move before, states no teacher row shows.
Standard imitation learning answers this two ways: DAgger (the model plays, the teacher labels;
dagger.py) and DART (the teacher plays with noise injected, and labels every state it reaches).
This is the second, with the noise shaped like the learner's own mistakes: on a share of the
exploring turns the move played is a slip, and the row keeps the teacher's decision as its label.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from localqwen_safari.bearings import farther_way
from localqwen_safari.episode import MAX_STEPS
from localqwen_safari.policies import OPPOSITE, Decision, heading_waypoint, last_move, notepad_waypoint
from localqwen_safari.world import MOVES

if TYPE_CHECKING:
    from localqwen_safari.episode import Episode
    from localqwen_safari.policies import Policy

SLIP_KINDS = ("push", "back", "any")


def push_move(episode: Episode) -> tuple[str, int] | None:
    """Four steps along the axis the waypoint lies farther along, whatever is in the way: what a
    learner that reads the bearing and not the view does."""
    waypoint = notepad_waypoint(episode.notepad)
    if waypoint is None:
        return None
    way = farther_way(episode.position, heading_waypoint(waypoint, episode.position, episode.world.size))
    return None if way is None else (way, MAX_STEPS)


def slip_move(episode: Episode, rng: random.Random) -> tuple[str, int]:
    """One slip: a push (see :func:`push_move`), the last move undone, or any move, drawn evenly;
    a kind that does not apply here falls back to any move."""
    kind = rng.choice(SLIP_KINDS)
    if kind == "push" and (push := push_move(episode)) is not None:
        return push
    if kind == "back" and (last := last_move(episode)) is not None:
        return OPPOSITE[last], rng.randint(1, MAX_STEPS)
    return rng.choice(sorted(MOVES)), rng.randint(1, MAX_STEPS)


def with_slip(decision: Decision, move: tuple[str, int]) -> Decision:
    """The teacher's decision with its move replaced by ``move`` (its notepad update is kept, so the
    notepad stays the teacher's); the one played, never a row's label."""
    direction, steps = move
    calls = [call for call in decision.calls if call[0] != "move"] + [("move", {"direction": direction, "steps": steps})]
    return Decision(decision.thought, calls, decision.situation)


def slipping(teacher: Policy, rate: float, labels: list[Decision],
             rng_for: Callable[[Episode], random.Random]) -> Policy:
    """A policy that plays ``teacher`` with a slip on ``rate`` of its exploring turns; every turn's
    label (the teacher's own decision) is appended to ``labels``. ``rng_for`` gives each episode its
    own seeded draw, so the same seed gives the same slips."""
    if not 0 <= rate < 1:
        raise ValueError(f"the slip rate must be in [0, 1), got {rate}")

    def policy(episode: Episode) -> Decision:
        decision = teacher(episode)
        labels.append(decision)
        rng = rng_for(episode)
        if rate and decision.situation.startswith("explore") and rng.random() < rate:
            return with_slip(decision, slip_move(episode, rng))
        return decision

    return policy
