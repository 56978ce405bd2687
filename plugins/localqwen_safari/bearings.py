"""Sightings relative to the agent: how the notepad takes them and how it shows them back.

A sighting on the notepad is a map cell ("zebra at (8, 15)"), so it stays true however far the
agent walks. Writing one from the view means adding the animal's place in the view to the agent's
own position, and reading one back means subtracting: two-digit arithmetic that a person does in
their head but a tiny model trained for half an hour gets wrong (its notepads held sightings at
wrong cells, which it then walked to: docs/safari_learning.md, "Learning proof"). So the notepad works as a
field notebook with a GPS would: a sighting may be written relative to the agent ("zebra 3 down 2 right",
read straight off the view), and :func:`pin_sightings` stores it with its map cell; and the
context shows each noted sighting with its bearing from where the agent stands now
(:func:`with_bearings`: "zebra at (8, 15) [3 down 2 right]"). Nothing is given away: the notepad
holds only what the agent wrote, and hiding it hides the bearings too. (The expert itself writes
map cells: see ``policies.notepad_text`` for why.)
"""

from __future__ import annotations

import re

from localqwen_safari.world import SPECIES, Cell

_SPECIES = "|".join(SPECIES)
# "zebra 3 down 2 right", "lion 4 up", "giraffe 1 left": rows first, then cols, at least one part.
_RELATIVE = re.compile(rf"\b({_SPECIES}) (?=\d)(?:(\d+) (up|down))?,? ?(?:(\d+) (left|right))?(?![\w(])")
_BEARING = re.compile(r" \[[^\]]*\]")  # a bearing shown by with_bearings, copied back by the writer
_PINNED = re.compile(rf"\b({_SPECIES}) at \((\d+), (\d+)\)")
WAYPOINT = re.compile(r"\bWaypoint \((\d+), (\d+)\)")  # the tour's notepad line (policies.waypoint_text)
WAYPOINT_REACH = 5  # a waypoint this near in each axis is reached: the tour goes on to its round's next one
REACHED = "reached"  # what the context shows for a noted waypoint within reach, in place of its bearing


def offset_parts(here: Cell, there: Cell) -> list[tuple[int, str, str]]:
    """The way from ``here`` to ``there``, rows first: (count, direction, "row" or "col") for each
    axis it moves along."""
    rows, cols = there[0] - here[0], there[1] - here[1]
    parts = []
    if rows:
        parts.append((abs(rows), "down" if rows > 0 else "up", "row"))
    if cols:
        parts.append((abs(cols), "right" if cols > 0 else "left", "col"))
    return parts


def farther_way(here: Cell, there: Cell) -> str | None:
    """The way ``there`` lies farther along from ``here`` (rows on a tie): "down" for 6 down 5
    right; None where they are one cell."""
    d_row, d_col = there[0] - here[0], there[1] - here[1]
    if d_row == d_col == 0:
        return None
    if abs(d_row) >= abs(d_col):
        return "down" if d_row > 0 else "up"
    return "right" if d_col > 0 else "left"


def bearing(here: Cell, there: Cell) -> str:
    """Where ``there`` lies from ``here`` in the notepad's words: "3 down 2 right", "4 up", "here"."""
    return " ".join(f"{count} {direction}" for count, direction, _ in offset_parts(here, there)) or "here"


def pin_sightings(text: str, here: Cell) -> str:
    """The notepad as stored: each relative sighting turned into its map cell as seen from ``here``
    ("zebra 3 down 2 right" at (5, 13) -> "zebra at (8, 15)"), and bearings copied back from the
    context dropped (they are shown afresh each turn). Everything else is kept as written."""

    def pin(match: re.Match[str]) -> str:
        species, rows, vertical, cols, horizontal = match.groups()
        if rows is None and cols is None:
            return match.group(0)
        row = here[0] + (int(rows) if rows else 0) * (1 if vertical == "down" else -1)
        col = here[1] + (int(cols) if cols else 0) * (1 if horizontal == "right" else -1)
        return f"{species} at ({row}, {col})"

    return _RELATIVE.sub(pin, _BEARING.sub("", text))


def with_bearings(notepad: str, here: Cell) -> str:
    """The notepad as the agent reads it: each sighting and waypoint followed by its bearing from ``here``."""
    shown = _PINNED.sub(lambda m: f"{m.group(0)} [{bearing(here, (int(m.group(2)), int(m.group(3))))}]", notepad)
    return with_waypoint_bearing(shown, here)


def within_reach(here: Cell, waypoint: Cell) -> bool:
    """WAYPOINT_REACH cells or fewer from ``waypoint`` in each axis: near enough that the view has
    shown most of what the waypoint's would, so the tour cuts the corner to the next one (seeds
    1000-1299, find-one / find-two: within 2 cells 68.3% / 37.7%, 3 70.3% / 40.0%, 4 74.3% / 41.7%,
    5 75.7% / 45.0%, 6 75.0% / 46.7%; at the lanes' 7-8 cells apart a larger reach would skip
    waypoints)."""
    return abs(here[0] - waypoint[0]) <= WAYPOINT_REACH and abs(here[1] - waypoint[1]) <= WAYPOINT_REACH


def waypoint_bearing(here: Cell, waypoint: Cell) -> str:
    """What the context shows after a noted waypoint: its bearing ("6 down 5 right"), or "reached"
    once it is within reach. A GPS that says "arrived" does the same; the agent then has one word to
    read where it had to judge two numbers against the reach. Played by the tour-taught tiny model
    with bearings only, 35% of its turns were spent within reach of a waypoint it had not left
    (docs/safari_learning.md, "Where the turns go in play"): the tour goes on at the first cell within
    reach, so its rows never show a bearing of one or two cells, which a learner that overshoots meets all
    the time."""
    return REACHED if within_reach(here, waypoint) else bearing(here, waypoint)


def with_waypoint_bearing(notepad: str, here: Cell) -> str:
    """The notepad with a waypoint written on it followed by :func:`waypoint_bearing` ("Waypoint
    (11, 26) [6 down 5 right].", "Waypoint (4, 11) [reached]."): what the compact context shows, so
    walking to it needs no two-digit subtraction. Measured on the tour's bench runs
    (docs/safari_learning.md, "The tour as teacher"): with the bearing the model won 31.0% / 10.0% against
    24.0% / 7.3%, though its exploring direction was no more often right (69-70% against 73-74%
    teacher-forced: both are the share of the tour's moves along the waypoint's farther axis)."""
    return WAYPOINT.sub(lambda m: f"{m.group(0)} [{waypoint_bearing(here, (int(m.group(1)), int(m.group(2))))}]", notepad)
