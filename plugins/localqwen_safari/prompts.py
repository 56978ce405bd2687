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
    "where you saw animals as 'species at (row, col)'), declare_found (within one cell of the target) and "
    "declare_done when every target is found."
)

# The short prompt for a tiny model trained from scratch (bench/bench_safari_learning.py): no tool
# schema in the prompt either. It learns the tools from the expert's calls, and every training
# token it does not need to read is time the 30-minute budget spends on what it must learn. The
# same profile must be used at evaluation (``evaluate --prompt compact``) as in training.
COMPACT_SYSTEM_PROMPT = "Safari guide: write 'Thought: ...', then call move, update_notepad, declare_found, declare_done."

PROMPTS = ("full", "compact")


def system_prompt(prompt: str) -> str:
    """The system prompt of a prompt profile: ``full`` (with the tool schema) or ``compact``."""
    if prompt not in PROMPTS:
        raise ValueError(f"unknown prompt profile {prompt!r} (expected one of {', '.join(PROMPTS)})")
    return SYSTEM_PROMPT if prompt == "full" else COMPACT_SYSTEM_PROMPT


_SENTENCE_END = re.compile(r"(?<=\.) (?=[A-Z])")
_TARGET_PLACE = re.compile(r"The (\w+) \((in view|remembered from my notepad)\) is at \((\d+), (\d+)\), ([^.]+)\.")
_SEEN_ANIMAL = re.compile(r"\b(an? )(\w+) at \((\d+), (\d+)\)")


def compact_thought(thought: str, here: tuple[int, int] | None = None) -> str:
    """The expert's Thought for the compact profile (a tiny model's): what it sees, where the target
    is when it knows, and its decision, in as few tokens as say it.

    - What it sees, placed from where it stands ("I see a lion 2 rows down and 3 cols right." or "I
      see no animals."), when ``here`` (its position when it chose) is given. Read straight off the
      image, with no coordinates to work out, so every row asks the model to look: with only the
      decision to learn from, a tiny model never learned to (teacher-forced it picked the direction
      to a target in view less often than always naming the commonest direction, and in play it
      explored past targets in plain view).
    - A remembered target's place ("The zebra is at (5, 9), 4 rows down."; its coordinates are in
      the notepad). A target in view is already placed by what it sees.
    - The decision, the last sentence ("I move left 3 steps towards it.", "... so I declare it
      found."), still stated as 'I move <direction> <n> steps', so Thought-Action consistency is
      checked exactly as for the full Thought.

    The full Thought's coordinates of every animal seen and its reasons for exploring are left out:
    every reply token is a decode step for every episode of an evaluation batch, and the sightings
    go into the notepad call anyway."""
    from localqwen_safari.policies import offset_text

    sentences = _SENTENCE_END.split(thought.strip())
    parts = []
    if here is not None and sentences[0].startswith("I see "):
        parts.append(_SEEN_ANIMAL.sub(lambda m: f"{m.group(1)}{m.group(2)} "
                                      f"{offset_text(here, (int(m.group(3)), int(m.group(4))))}", sentences[0]))
    target = _TARGET_PLACE.search(thought)
    if target is not None:
        species, where, row, col, offset = target.groups()
        if where != "in view":
            parts.append(f"The {species} is at ({row}, {col}), {offset}.")
        elif here is None:
            parts.append(f"The {species} is {offset}.")
    parts.append(sentences[-1])
    return " ".join(parts)
