"""The look: where the mission's targets are in the view, asked as a question of its own before the reply.

A tiny model trained from scratch on whole replies learns to sweep from its context and notepad and
hardly ever to go for a target it sees (docs/safari_learning.md, "Learning proof": own replies agree with
the teacher on 12-15% of the turns with the target in view). Reading the view steered by the mission works
only as a short question put before the image, with a token per cell: each cell's token can then
read which species is asked and mark itself ("Where is the lion?", docs/safari_learning.md, "Vision warm-up").

So with ``look`` on, a turn is two questions to the same model: first, for each target not yet
found, "Where is the lion?" with the view (:func:`look_conversation`) -> "The lion is 2 rows down and
3 cols right." or "No lion in view."; then the reply, whose context ends with what the look said
(:func:`with_look`). The answer is relative to the agent; like the notepad's bearings
(bearings.py), the policy adds the map cell it names (a field notebook with a GPS), so the
reply copies the sighting into its notepad without two-digit arithmetic. Nothing is given away:
the look line holds only what the model itself said, and with a blank image it sees nothing.
Training rows hold both questions, the reply's look line written from the view itself.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from localqwen_safari.policies import nearest_cell, offset_text, visible_animals
from localqwen_safari.prompts import system_prompt

if TYPE_CHECKING:
    from localqwen_safari.episode import Episode
    from localqwen_safari.world import Cell

LOOK_PREFIX = "Look: "
MAX_ANSWER_CHARS = 80  # a look answer is one short sentence; anything longer is cut, never trusted whole
_ANSWER = re.compile(r"The (\w+) is (?:(\d+) rows? (up|down))?(?: and )?(?:(\d+) cols? (left|right))?")


def look_targets(episode: Episode) -> list[str]:
    """The species the look asks about: the mission's targets not yet found, in mission order."""
    return [target for target in episode.mission.targets if target not in episode.found]


def nearest(species: str, here: Cell, in_view: list[tuple[str, Cell]]) -> Cell | None:
    """The map cell of the nearest animal of ``species`` in view (nearest as the teachers pick it)."""
    return nearest_cell([cell for name, cell in in_view if name == species], here)


def sighting(species: str, here: Cell, in_view: list[tuple[str, Cell]]) -> str:
    """What a perfect look answers: where the nearest animal of ``species`` in view is ("The lion is 2
    rows down and 3 cols right."), or "No lion in view."."""
    cell = nearest(species, here, in_view)
    return f"No {species} in view." if cell is None else f"The {species} is {offset_text(here, cell)}."


def target_sentence(targets: list[str], here: Cell, in_view: list[tuple[str, Cell]]) -> str:
    """What the compact Thought begins with: the current target's :func:`sighting` ("No lion in
    view." / "The lion is 2 rows down and 3 cols right."), or nothing once every target is found."""
    return sighting(targets[0], here, in_view) if targets else ""


def look_line(targets: list[str], here: Cell, in_view: list[tuple[str, Cell]]) -> str:
    """The look line a perfect look gives (training rows), map cells added."""
    return " ".join(pinned(sighting(species, here, in_view), here) for species in targets)


def true_look(episode: Episode) -> str:
    """:func:`look_line` on the episode's current turn."""
    return look_line(look_targets(episode), episode.position, visible_animals(episode))


def pinned(answer: str, here: Cell) -> str:
    """A look answer with the map cell it names ("The lion is 2 rows down and 3 cols right, at (14,
    10)."); an answer that names no place is kept as said (cut to one short sentence)."""
    answer = " ".join(answer.split())[:MAX_ANSWER_CHARS]
    match = _ANSWER.match(answer)
    if match is None or not (match.group(2) or match.group(4)) or not answer.endswith("."):
        return answer
    _, rows, vertical, cols, horizontal = match.groups()
    row = here[0] + (int(rows) if rows else 0) * (1 if vertical == "down" else -1)
    col = here[1] + (int(cols) if cols else 0) * (1 if horizontal == "right" else -1)
    return f"{answer[:-1]}, at ({row}, {col})."


def with_look(context: str, look: str) -> str:
    """The reply's context with the look line last."""
    return f"{context}\n{LOOK_PREFIX}{look}" if look else context


def look_question(species: str) -> str:
    return f"Where is the {species}?"


def look_conversation(image: str, species: str, prompt: str) -> list[dict[str, Any]]:
    """The look's question, put before the image (see the module's docstring for why)."""
    return [{"role": "system", "content": system_prompt(prompt)},
            {"role": "user", "content": [{"type": "text", "text": look_question(species)},
                                         {"type": "image", "image": image}]}]


def look_row(image: str, species: str, answer: str, prompt: str) -> dict[str, Any]:
    """A training row for the look: its question on a view, answered as a perfect look would."""
    return {"messages": [*look_conversation(image, species, prompt), {"role": "assistant", "content": answer}]}
