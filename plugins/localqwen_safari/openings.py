"""The openings: how many steps the view shows open each way, said in the reply before its move.

In play the tour-taught tiny model walked into water or rock its view showed on 22% of its moves
(each a wasted turn: 0 steps walked; docs/safari_learning.md, "Where the exploring goes wrong, and slips"),
though teacher-forced its exploring direction was right on 70% of the teacher's turns. The tour never
picks a way its view shows shut, and on its exploring turns the waypoint's bearing (in the context)
with how far each way is open decides its direction on 87% of the turns whose case was met before
(probe, seeds 0-1999 against 101,000-101,299). How far each way is open is read off four fixed
lines of cells around the agent (it stands at the view's row 4, col 4), the same every turn, so
with ``openings`` on every compact Thought says it right after the target's sentence, before the
waypoint and the move: "No lion in view. Open: up 3, down 0, left 4, right 1. Waypoint (12, 20),
...". The reply then chooses its move with the openings it has just written in front of it,
as it copies the waypoint's bearing from its context. Nothing is given away: the model reads the
openings off the image itself (with a blank image it has nothing to read them from).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from localqwen_safari.policies import open_steps
from localqwen_safari.world import MOVES

if TYPE_CHECKING:
    from localqwen_safari.episode import Episode

OPENING = re.compile(r"\bOpen: up (\d), down (\d), left (\d), right (\d)\.")


def opening_sentence(steps: dict[str, int]) -> str:
    """The openings as the reply says them: "Open: up 3, down 0, left 4, right 1."."""
    return "Open: " + ", ".join(f"{direction} {steps[direction]}" for direction in MOVES) + "."


def open_ways(episode: Episode) -> dict[str, int]:
    """How many steps each way the episode's current view shows open (policies.open_steps: up to 4
    steps, land without an animal)."""
    return {direction: open_steps(episode, direction) for direction in MOVES}


def said_opening(thought: str) -> dict[str, int] | None:
    """The openings a Thought says (None when it says none)."""
    match = OPENING.search(thought)
    return None if match is None else {direction: int(n) for direction, n in zip(MOVES, match.groups(), strict=True)}


def with_opening(lead: str, opening: str) -> str:
    """A compact Thought's lead (the target's sentence) with the openings after it."""
    return " ".join(part for part in (lead, opening) if part)

