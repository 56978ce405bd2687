"""The route lesson: which move leads towards a place, asked of one view as a question of its own.

A tiny model taught by the tour explores by heading for the waypoint on its notepad, whose bearing
the context shows ("Waypoint (11, 26) [6 down 5 right]."). Trained on the replies alone it learned
"go the way it mostly lies" and none of the detours round the water and rock in view (teacher-forced,
its exploring direction was right exactly as often as the waypoint's farther axis is the tour's
way: docs/safari_learning.md, "The tour as teacher"). Finding the way on the view is one skill, the same
for every bearing, and one view can be asked it many times over; the replies ask it once a turn at most. So,
as the look taught reading the view (look.py), route rows ask it densely: "Way to 6 down 5 right?"
before the view -> "I move right 4 steps." (the reply's own words for a move), the answer being
the tour's move knowing only the cells in view (policies.view_route: the tour's own move on 95% of
its exploring turns). The goals are random cells of the map, so the lesson covers every bearing.

Measured (docs/safari_learning.md, "The route lesson"): as training rows alone the route is learned (75.3% of
held-out route questions answered exactly as the tour would) but the replies' exploring moves are no
better, and the run won less: a skill learned as a question of its own is not used in the middle of
a reply. So, as the look does for the target, the route can also be *asked at play* (``ask route``):
each turn the model is first asked the route to the waypoint its notepad says it heads for
(:func:`route_goal`), and its answer is a line of the reply's context, before "Find: ..." ("Way to 6
down 5 right: I move right 4 steps."), for the reply to copy. Training rows then hold the route a perfect answer gives
(:func:`true_route_line`). Nothing of the map is given away: the place asked about is read off the
notepad the agent wrote (a hidden notepad asks nothing), and the line holds only the model's answer.
Measured (docs/safari_learning.md, "The route asked at play"): the replies copy the line (teacher-forced
exploring direction 84-94% against 69-70%), but the model's own answers miss rock beside it and the route
rows' steps leave its target handling weaker: 21.7% / 2.3% against 31.0% / 10.0%, so it is off by
default too.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from localqwen_safari.bearings import bearing
from localqwen_safari.episode import MAX_STEPS
from localqwen_safari.look import MAX_ANSWER_CHARS
from localqwen_safari.policies import (
    heading_waypoint,
    notepad_waypoint,
    thought_moves,
    view_route,
)
from localqwen_safari.prompts import compact_user, system_prompt

if TYPE_CHECKING:
    from localqwen_safari.episode import Episode
    from localqwen_safari.world import Cell

QUESTION_PREFIX = "Way to "
ROUTE_TOKENS = 12  # "I move right 4 steps." is 7 tokens of the tiny model's tokenizer


def route_question(here: Cell, goal: Cell) -> str:
    """The route question for ``goal`` seen from ``here``: "Way to 6 down 5 right?"."""
    return f"{QUESTION_PREFIX}{bearing(here, goal)}?"


def route_answer(move: tuple[str, int]) -> str:
    """A move in the words the replies state it: "I move right 4 steps."."""
    direction, steps = move
    return f"I move {direction} {steps} step{'s' if steps != 1 else ''}."


def route_goal(episode: Episode) -> Cell | None:
    """The place the route stage asks about, read off the agent's notepad as the tour reads its
    own: the noted waypoint, or the round's next one once within reach of it
    (policies.heading_waypoint). None while a target is left to find and no waypoint is noted (or
    one off the map), when every target is found, or where the agent stands on it. Counted on the tour's episodes (200
    missions), the view-only route to it is the tour's own move on 91% of its exploring turns.

    Not a noted sighting of the target (tried first, docs/safari_learning.md "The route lesson"): a route
    line whose bearing is the target's taught the replies to read the target's place off that line instead of
    the view, and in play, where the model notes sightings at wrong cells, it walked to them and
    declared finds there (99% of its finds false)."""
    if episode.current_target is None:
        return None
    waypoint = notepad_waypoint(episode.notepad)
    if waypoint is None or not episode.world.inside(waypoint):  # a model may note a waypoint off the map
        return None
    goal = heading_waypoint(waypoint, episode.position, episode.world.size)
    return None if goal == episode.position else goal


def route_line(here: Cell, goal: Cell, answer: str) -> str:
    """The reply's context line for a route answer ("Way to 6 down 5 right: I move right 4 steps."),
    or "" when the answer states no single move (a garbled answer adds nothing, never a half-line)."""
    moves = thought_moves(answer[:MAX_ANSWER_CHARS])  # cut as a look answer is: one short sentence
    if len(moves) != 1 or not 1 <= moves[0][1] <= MAX_STEPS:
        return ""
    return _line(here, goal, moves[0])


def _line(here: Cell, goal: Cell, move: tuple[str, int]) -> str:
    return f"{QUESTION_PREFIX}{bearing(here, goal)}: {route_answer(move)}"


def true_route_line(episode: Episode) -> str:
    """The route line a perfect answer gives on the episode's current turn (training rows)."""
    goal = route_goal(episode)
    move = None if goal is None else view_route(episode, goal)
    return "" if goal is None or move is None else _line(episode.position, goal, move)


def with_route(context: str, line: str) -> str:
    """The compact context with the route line before its last line ("Find: lion."), which stays
    last so that the view's tokens right after it can read the species asked."""
    if not line:
        return context
    head, _, last = context.rpartition("\n")
    return f"{head}\n{line}\n{last}" if head else f"{line}\n{last}"


def route_goals(episode: Episode, rng: random.Random, count: int) -> list[Cell]:
    """``count`` distinct cells of the map other than where the agent stands, drawn by ``rng``."""
    rows, cols = episode.world.size
    cells = [(r, c) for r in range(rows) for c in range(cols) if (r, c) != episode.position]
    return rng.sample(cells, min(count, len(cells)))


def route_questions(episode: Episode, rng: random.Random, count: int) -> list[tuple[str, str]]:
    """Up to ``count`` (question, answer) pairs on the episode's current view, for random goals
    that a way leads to (policies.view_route)."""
    pairs = []
    for goal in route_goals(episode, rng, count):
        move = view_route(episode, goal)
        if move is not None:
            pairs.append((route_question(episode.position, goal), route_answer(move)))
    return pairs


def route_messages(image: str, question: str, answer: str | None = None, prompt: str = "compact") -> list[dict[str, Any]]:
    """A route row (with ``answer``) or the conversation that asks it: the question before the
    view, as the compact profile puts the context before it, so every cell's token can read it."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(prompt)},
                                      {"role": "user", "content": compact_user(image, question)}]
    if answer is not None:
        messages.append({"role": "assistant", "content": answer})
    return messages


def route_accuracy(model: Any, rows: list[Any], *, limit: int = 600, batch: int = 50) -> dict[str, float]:
    """How often ``model`` (a model folder) answers route rows (tiny_training.TinyRow, route.py's
    rows: held-out views) as the tour would: the whole move (``exact``) and its direction alone
    (``direction``), beside how often the commonest direction would be right (``majority``)."""
    import tempfile
    from collections import Counter
    from pathlib import Path

    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen_safari.policies import thought_moves

    asked = [(row.view, row.messages[1]["content"][0]["text"], row.messages[-1]["content"]) for row in rows[:limit]]
    if not asked:
        raise ValueError("no route rows to ask")
    exact = direction = 0
    settings = GenerationSettings(max_new_tokens=12)
    with tempfile.TemporaryDirectory(prefix="safari-route-") as folder, TransformersEngine(Path(model)) as engine:
        for first in range(0, len(asked), batch):
            group = asked[first:first + batch]
            conversations = []
            for number, (view, question, _) in enumerate(group):
                image = Path(folder) / f"view-{first + number}.png"
                image.write_bytes(view)
                conversations.append(route_messages(str(image), question))
            for (_, _, answer), result in zip(group, engine.chat_batch(conversations, settings=settings), strict=True):
                said, wanted = thought_moves(result.text), thought_moves(answer)
                exact += said == wanted
                direction += bool(said) and said[0][0] == wanted[0][0]
    commonest = Counter(thought_moves(answer)[0][0] for _, _, answer in asked).most_common(1)[0][1]
    return {"rows": len(asked), "exact": round(exact / len(asked), 4), "direction": round(direction / len(asked), 4),
            "majority": round(commonest / len(asked), 4)}
