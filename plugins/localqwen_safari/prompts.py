"""The system prompt every safari agent (and every training row) gets."""

from __future__ import annotations

import re

from localqwen_safari.episode import MAX_STEPS, VIEW, VIEW_BEFORE
from localqwen_safari.render import CELL_PX

SYSTEM_PROMPT = (
    f"You are a safari guide on a grid of land. The image is your view: {VIEW}x{VIEW} cells, {CELL_PX} px per "
    f"cell, you are the red cell at view row {VIEW_BEFORE}, col {VIEW_BEFORE}. Sand is land, blue is water, grey "
    "is rock, black is outside the map. Animals: white = zebra, orange = lion, purple = elephant, yellow = "
    "giraffe. Water, rock, animals and the edge block your way. Each turn, first write one line 'Thought: ...' "
    "saying what you see, where you go and why (state a move as 'I move <direction> <n> steps'), then call "
    f"tools: move (1-{MAX_STEPS} steps in one direction), update_notepad (your memory between turns: write down "
    "where you saw animals as 'species at (row, col)' or relative to you as 'species 3 down 2 right'; your "
    "context shows each noted animal's bearing from you in brackets), declare_found (within one cell of the target) and "
    "declare_done when every target is found."
)

# The short prompt for a tiny model trained from scratch (bench/bench_safari_learning.py): no tool
# schema in the prompt either. It learns the tools from the expert's calls, and every training
# token it does not need to read is time the 30-minute budget spends on what it must learn. The
# same profile must be used at evaluation (``evaluate --prompt compact``) as in training.
COMPACT_SYSTEM_PROMPT = "Safari guide: write 'Thought: ...', then call move, update_notepad, declare_found, declare_done."

PROMPTS = ("full", "compact")


def compact_user(image: str, context: str) -> list[dict[str, str]]:
    """The compact profile's user message: the context (ending with the species to find now), then
    the view. A decoder reads left to right, so with the image last every cell's image token can
    see which species is asked and mark itself; with the image first the cells know nothing of the
    mission and the reply must search them (docs/safari_learning.md, "Marking the target"). The full
    profile keeps the image first, as Qwen3-VL's own chats do."""
    return [{"type": "text", "text": context}, {"type": "image", "image": image}]


def system_prompt(prompt: str) -> str:
    """The system prompt of a prompt profile: ``full`` (with the tool schema) or ``compact``."""
    if prompt not in PROMPTS:
        raise ValueError(f"unknown prompt profile {prompt!r} (expected one of {', '.join(PROMPTS)})")
    return SYSTEM_PROMPT if prompt == "full" else COMPACT_SYSTEM_PROMPT


_SENTENCE_END = re.compile(r"(?<=\.) (?=[A-Z])")
_WAYPOINT_PLACE = re.compile(r"My waypoint is \((\d+), (\d+)\), ([^.]+)\.")
_WAYPOINT_REACHED = re.compile(r"I am at my waypoint \((\d+, \d+)\), so I go on to the next, \((\d+, \d+)\)\.")
_TARGET_PLACE = re.compile(r"The (\w+) \((in view|remembered from my notepad)\) is at \((\d+), (\d+)\), ([^.]+)\.")


def compact_thought(thought: str, lead: str = "") -> str:
    """The expert's Thought for the compact profile: its decision (the last sentence: "I move left 3
    steps towards it.", "... so I declare it found."), after where the target is when it knows: "The
    lion is 2 rows down and 3 cols right." for one in view (read off the image: no coordinates to
    work out), "The lion is at (6, 20), 2 rows down and 3 cols right." for one remembered (its
    coordinates come from the notepad). Every reply token is a decode step for every episode of an
    evaluation batch, and the "I see ..." inventory is in the notepad call anyway; but without the
    target's place a tiny model had to map the image straight to a direction word and never learned
    to (teacher-forced on in-view turns it stated the right direction less often than always saying
    the commonest one); with the place first and the vision warm-up it states the right direction on
    85% of those turns (docs/safari_learning.md, "Learning proof"). The tour's exploring turns keep where
    its waypoint lies ("Waypoint (12, 20), 3 rows down and 5 cols right."), read off the bearing the context
    shows beside the notepad's waypoint; on the turn it goes on from a waypoint the context marks
    reached, which one it leaves and which it heads for ("Waypoint (4, 11) reached, next (4, 19).")
    and no bearing: the new waypoint's is not in the context until the next turn, and working it out
    is the two-digit subtraction a tiny model does not learn (the tour's move then goes the new
    waypoint's farther way on 73% of such turns, counted on 200 of its episodes). The move is still
    stated as 'I move <direction> <n> steps', so Thought-Action consistency is checked exactly as
    for the full Thought.

    ``lead``: the current target's sentence on every turn (look.target_sentence: "No lion in view."
    or where it is), put first; the in-view place is then not said twice. Every reply then begins
    by saying whether the target is in the image, which is the decision a tiny model failed to
    learn when only one reply in six named the target (docs/safari_learning.md, "Marking the target")."""
    decision = _SENTENCE_END.split(thought.strip())[-1]
    target = _TARGET_PLACE.search(thought)
    if target is None:
        place = ""
    else:
        species, where, row, col, offset = target.groups()
        place = f"The {species} is {offset}." if where == "in view" else f"The {species} is at ({row}, {col}), {offset}."
        if lead and where == "in view":
            place = ""
    waypoint = _WAYPOINT_PLACE.search(thought)
    reached = _WAYPOINT_REACHED.search(thought)
    if reached is not None:  # the tour's, going on from a waypoint the context marks reached
        place = f"Waypoint ({reached.group(1)}) reached, next ({reached.group(2)})."
    elif waypoint is not None:  # the tour's: where its waypoint lies, worked out before the move that follows
        row, col, offset = waypoint.groups()
        place = f"Waypoint ({row}, {col}), {offset}."
    return " ".join(part for part in (lead, place, decision) if part)
