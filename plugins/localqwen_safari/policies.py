"""Scripted players: ``random``, ``greedy``, ``expert``, ``sweeper``, ``tour`` and ``compass``.

Each policy is a pure function of what the agent could know (the episode's current view, the
cells it has had in view, its notepad, the results it read) and returns a :class:`Decision`: a
``Thought`` and the turn's tool calls. None of them peeks at parts of the map it has not seen.
Randomness comes from ``random.Random`` seeded with the mission id and turn, so a replay is
identical. The expert's Thought states its move as ``I move <direction> <n> step(s)``, which
:func:`thought_moves` reads back to check that the Thought and the call agree.
"""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from localqwen_safari.bearings import (
    WAYPOINT,
    bearing,
    farther_way,
    offset_parts,
    pin_sightings,
    within_reach,
)
from localqwen_safari.episode import MAX_STEPS, VIEW, VIEW_BEFORE, Call, Episode
from localqwen_safari.world import LAND, MOVES, SPECIES, Cell, flood, within_one

_SIGHTING = re.compile(r"\b(" + "|".join(SPECIES) + r") at \((\d+), (\d+)\)")
_ROUTE = re.compile(r"\bRoute to \((\d+), (\d+)\): ((?:up|down|left|right) [1-9](?:, (?:up|down|left|right) [1-9])*)\.")
TURN_COST = 12  # unseen cells an extra turn of walking must be worth (tuned on seeds 1000-1099)
# The expert's exploring goal: chosen at least PLAN_MIN_TURNS away, at PLAN_TURN_COST unseen cells
# per turn, with the moves left to it written on the notepad ("Route to (20, 14): down 4, right 2."),
# which the next turns follow. Writing the route down makes most exploring turns a copy of the
# notepad's first move, which a learner that sees one turn can do; the goal beside it lets a player
# that strayed from the route go on to the same goal (what it needs is still on the notepad) instead
# of choosing anew from what it has seen (bench_safari_imitation_ceiling.py: with routes alone, an
# imitator's wrong new-goal moves cost 3 points of success and 7 of agreement). Goals 3 turns away
# cost 12-17 points of success against 2.
PLAN_TURN_COST = 9
PLAN_MIN_TURNS = 2
LANE_GAP = 8  # the tour's lanes: at most this many cells apart
STATED_MOVE = re.compile(r"\bI move (up|down|left|right) (\d+) steps?\b")


# What the expert's decision rests on (``Decision.situation``): the evaluation splits agreement by
# it, because the situations differ in what a learner can see. A target in view is in the image; a
# remembered one and an exploring goal kept from an earlier turn are in the notepad; choosing a new
# exploring goal rests on every cell seen so far, which no single observation shows. The last two
# are the sweeper's exploring (see :func:`sweeper`): going on in the noted sweep (the notepad and the
# view ahead say so), or turning where the view shows the sweep's way ends (the edge, water).
# The waypoint situations are the tour's (see :func:`tour`): heading for the noted waypoint, or
# going on to the round's next one.
# "finish" is the turn after the last find was confirmed: the context says every target is found.
SITUATIONS = ("declare", "finish", "target in view", "target remembered", "explore (noted route)", "explore (noted goal)",
              "explore (new goal)", "explore (sweep on)", "explore (sweep turn)", "explore (waypoint on)",
              "explore (waypoint next)")

# The situations each teacher meets in its own episodes ("explore (noted goal)" is the expert's only
# when a player strayed from its route, which the expert itself never does).
SITUATIONS_MET = {"expert": ("declare", "finish", "target in view", "target remembered", "explore (noted route)",
                             "explore (new goal)"),
                  "sweeper": ("declare", "finish", "target in view", "target remembered", "explore (sweep on)",
                              "explore (sweep turn)"),
                  "tour": ("declare", "finish", "target in view", "target remembered", "explore (waypoint on)",
                           "explore (waypoint next)")}
SITUATIONS_MET["compass"] = SITUATIONS_MET["tour"]


@dataclass
class Decision:
    thought: str
    calls: list[Call] = field(default_factory=list)
    situation: str = ""  # one of SITUATIONS for the expert's decisions, "" for other policies

    def action(self) -> list[Call]:
        """What the agent does in the world (notepad writing left out): compared for agreement."""
        return [(name, args) for name, args in self.calls if name != "update_notepad"]


Policy = Callable[[Episode], Decision]


def thought_moves(thought: str) -> list[tuple[str, int]]:
    """The moves a Thought states, as (direction, steps)."""
    return [(direction, int(steps)) for direction, steps in STATED_MOVE.findall(thought)]


def thought_consistent(decision: Decision) -> bool:
    """The Thought's stated moves are exactly the turn's move calls (none stated = none made).

    A turn without any valid call (a wasted reply) is never consistent: otherwise a model that
    writes nothing usable would score as perfectly consistent."""
    if not decision.calls:
        return False
    made = [(args.get("direction"), args.get("steps")) for name, args in decision.calls if name == "move"]
    return thought_moves(decision.thought) == made


# -- what the agent sees and remembers ---------------------------------------------------------
def visible_animals(episode: Episode) -> list[tuple[str, Cell]]:
    view = set(episode.view_cells())
    return [(a.species, a.cell) for a in episode.world.animals if a.cell in view]


def notepad_sightings(notepad: str) -> list[tuple[str, Cell]]:
    return [(species, (int(r), int(c))) for species, r, c in _SIGHTING.findall(notepad)]


def notepad_route(notepad: str) -> tuple[Cell | None, list[tuple[str, int]]]:
    """The goal and the moves left to it that the notepad holds ("Route to (20, 14): down 4,
    right 2."), first move first; (None, []) without a route."""
    match = _ROUTE.search(notepad)
    if match is None:
        return None, []
    moves = [(direction, int(steps)) for direction, steps in (move.split() for move in match.group(3).split(", "))]
    return (int(match.group(1)), int(match.group(2))), moves


def route_text(goal: Cell, moves: list[tuple[str, int]]) -> str:
    """A route as the notepad holds it; "" once no move is left (the goal is reached)."""
    if not moves:
        return ""
    return f"Route to ({goal[0]}, {goal[1]}): " + ", ".join(f"{direction} {steps}" for direction, steps in moves) + "."


def notepad_text(sightings: list[tuple[str, Cell]]) -> str:
    """The sightings line the expert keeps: "Seen: zebra at (5, 3); lion at (6, 20)." ("" for none).
    Map cells, not sightings relative to itself (which the notepad would take, bearings.py): with
    "zebra 2 down 3 right" written into its notepad calls, a tiny model trained on the expert's
    turns mixed up the notepad's words and the move's, and wrote move arguments under other tools'
    names (docs/safari_learning.md, "Learning proof")."""
    if not sightings:
        return ""
    order = {name: i for i, name in enumerate(SPECIES)}
    ordered = sorted(set(sightings), key=lambda item: (order[item[0]], item[1]))
    return "Seen: " + "; ".join(f"{species} at ({r}, {c})" for species, (r, c) in ordered) + "."


def offset_text(here: Cell, there: Cell) -> str:
    """The way to ``there`` as the Thought says it: "2 rows down and 3 cols right"."""
    return " and ".join(f"{count} {axis}{'s' * (count != 1)} {direction}"
                        for count, direction, axis in offset_parts(here, there)) or "right here"


def _move_text(direction: str, steps: int) -> str:
    return f"I move {direction} {steps} step{'s' * (steps != 1)}"


def _a(species: str) -> str:
    return ("an " if species[0] in "aeiou" else "a ") + species


# -- the expert --------------------------------------------------------------------------------
def expert(episode: Episode) -> Decision:
    """Walks to the current target once it has ever seen it (its notepad remembers sightings);
    otherwise explores: it picks the reachable ground that shows the most unseen cells, writes the
    goal and the moves left to it on its notepad and follows that route over the next turns; when
    the route no longer leads to its goal over known ground (the player strayed, or a move was
    stopped) it goes to the same goal another way, and once the route is done it picks a new goal."""
    return _go_for_target(episode, _explore_by_plan)


def sweeper(episode: Episode) -> Decision:
    """The expert's way with targets, and a way of exploring whose every decision rests on what one
    turn shows: it sweeps the map in rows, written on its notepad as "Sweep right, shift down.":
    each turn it walks up to 4 steps the way it sweeps, over the cells its view shows open; where
    the view shows the map's edge ahead it shifts the other way (twice, "shift down again", so the
    next row of sweeping sees new ground) and sweeps back, and where water or rock blocks the way
    it shifts once and goes on. No memory of where it has been beyond that line: a learner that
    sees one turn can make every one of these decisions (the planner's choice of a new goal rests
    on every cell seen so far). It finds less than the expert (README, "Policies")."""
    return _go_for_target(episode, _explore_by_sweep)


def tour(episode: Episode) -> Decision:
    """The expert's way with targets, and a way of exploring whose every decision a learner can
    make from one turn: it walks a fixed round of waypoints laid over the map (:func:`tour_waypoints`)
    so that their views cover it all, keeping the one it heads for on its notepad ("Waypoint (12,
    20)."). Each turn it takes the longest move on a fewest-turns way to that waypoint (unseen ground
    counted open; the position is in the context, the waypoint and its bearing in the notepad);
    within reach of it (bearings.within_reach; once a turn) or where it cannot be reached, the
    notepad gets the round's next one, the same for every map of that size. It starts from the
    waypoint nearest to where it stands. The expert's choice of a new goal rests on every cell seen
    so far, which no single turn shows (docs/safari_learning.md, "Where the missions are lost")."""
    return _go_for_target(episode, _explore_by_tour)


def compass(episode: Episode) -> Decision:
    """The tour's round of waypoints, each exploring move read off what the turn's context shows:
    the bearing to the waypoint, the open steps in view and the last move (:func:`_move_by_bearing`).
    The tour's move rests on a turn search over every cell seen so far; a learner that imitates it
    took the tour's move on 45% of turns (docs/safari_learning.md, "Reached, and the round's next
    waypoint"). This rule agrees with the tour on 75% of all its turns and wins a little less itself (64.7%
    / 38.3% on seeds 1000-1299, the tour 75.7% / 43.0%): a teacher that is easier to learn (a tiny model it
    taught agreed with it on 62-67% of its turns in play and won 48.7% / 22.0%: docs/safari_learning.md,
    "The compass as teacher"). Its notes of targets are written as the view shows them and checked by sight
    (:func:`_go_by_notes`), so everything it writes and reads is in one turn's image and text: it
    wins 64.0% / 36.7% so, and the model it taught agreed with it on 73-75% of its turns in play
    and won 54.3% / 18.7% (docs/safari_learning.md, "Notes as seen")."""
    return _go_by_notes(episode, partial(_explore_by_tour, move=_move_by_bearing))


Explore = Callable[[Episode, list[Call], str, str, str], Decision]
# A move towards an exploring goal, given the turn search from it (unseen ground counted open; empty
# for the compass's rule, which reads the turn alone).
MoveRule = Callable[[Episode, Cell, dict[Cell, tuple[int, tuple[str, int]]]], tuple[str, int]]


def _go_for_target(episode: Episode, explore: Explore) -> Decision:
    """Declare, walk to a target seen in view or noted, or explore with ``explore``."""
    here = episode.position
    visible = visible_animals(episode)
    sightings = notepad_sightings(episode.notepad) + visible
    calls: list[Call] = []
    notepad = notepad_text(sightings)
    if notepad and notepad != episode.notepad:
        calls.append(("update_notepad", {"text": notepad}))
    seen_text = ("I see " + ", ".join(f"{_a(s)} at ({r}, {c})" for s, (r, c) in visible) + ".") if visible \
        else "I see no animals."
    target = episode.current_target
    if target is None:
        return Decision(f"{seen_text} Every target is found, so I finish.", calls + [("declare_done", {})], "finish")
    known = sorted((cell for species, cell in sightings if species == target),
                   key=lambda cell: (abs(cell[0] - here[0]) + abs(cell[1] - here[1]), cell))
    if known:
        spot = known[0]
        if within_one(here, spot):
            # declare_done waits for the next turn, after the result confirms the find: a learner
            # that copied "found and done" in one turn ended its mission with every false find
            # (docs/safari_learning.md, "Marking the target"); the expert pays one turn for it.
            return Decision(f"{seen_text} The {target} at ({spot[0]}, {spot[1]}) is within one cell of me, so I "
                            "declare it found.", calls + [("declare_found", {"species": target})], "declare")
        move = _move_to_beside(episode, spot)
        if move is not None:
            direction, steps = move
            where = "remembered from my notepad" if (target, spot) not in visible else "in view"
            return Decision(f"{seen_text} The {target} ({where}) is at ({spot[0]}, {spot[1]}), "
                            f"{offset_text(here, spot)}. {_move_text(direction, steps)} towards it.",
                            calls + [("move", {"direction": direction, "steps": steps})],
                            "target in view" if where == "in view" else "target remembered")
    return explore(episode, calls, notepad, seen_text, target)


def _move_to_beside(episode: Episode, spot: Cell) -> tuple[str, int] | None:
    """The first move on a fewest-turns way to a cell within one of ``spot`` (unseen ground counted
    open; ties to the lower cell); None when no such cell can be reached."""
    reach = _turn_search(episode, optimistic=True)
    goal = min((cell for cell in reach if within_one(cell, spot)), key=lambda cell: (reach[cell][0], cell), default=None)
    return None if goal is None else reach[goal][1]


def target_notes(episode: Episode) -> tuple[str, dict[str, Cell]]:
    """The compass's notes: for each target not yet found (mission order), the nearest one in view,
    written as the view shows it ("lion 3 down 2 right": the notepad pins it to its map cell,
    bearings.pin_sightings) unless the notepad already holds that cell; else the noted one, kept as
    written, while its cell is out of view. A noted cell in view without the animal is a wrong note
    and is left out (the view would show it: animals stay where they are). Returns the "Seen: ..."
    text ("" for none) and the cell believed for each noted target.

    Why not the expert's map cells of every animal: a tiny model taught to write them wrote a right
    cell on 5 of 271 of its new notes in play (two-digit addition; find-two seeds 1000-1059,
    docs/safari_learning.md, "Notes as seen"); and notes of other species are never walked to."""
    here = episode.position
    in_view = set(episode.view_cells())
    visible = visible_animals(episode)
    noted = notepad_sightings(episode.notepad)
    entries: list[str] = []
    believed: dict[str, Cell] = {}
    for species in dict.fromkeys(t for t in episode.mission.targets if t not in episode.found):
        seen = nearest_cell([cell for name, cell in visible if name == species], here)
        kept = next((cell for name, cell in noted if name == species and cell not in in_view), None)
        if seen is not None:
            believed[species] = seen
            entries.append(f"{species} at ({seen[0]}, {seen[1]})" if (species, seen) in noted
                           else f"{species} {bearing(here, seen)}")
        elif kept is not None:
            believed[species] = kept
            entries.append(f"{species} at ({kept[0]}, {kept[1]})")
    return ("Seen: " + "; ".join(entries) + ".") if entries else "", believed


def nearest_cell(cells: list[Cell], here: Cell) -> Cell | None:
    """The nearest of ``cells`` (fewest steps, then the lower cell): the one the teachers walk to and
    the Thought's first sentence names (look.nearest)."""
    return min(cells, key=lambda cell: (abs(cell[0] - here[0]) + abs(cell[1] - here[1]), cell)) if cells else None


def beside(here: Cell, spot: Cell) -> Cell:
    """The cell within one of ``spot`` nearest to ``here`` (one cell short on each axis it lies along)."""
    return (spot[0] - (spot[0] > here[0]) + (spot[0] < here[0]), spot[1] - (spot[1] > here[1]) + (spot[1] < here[1]))


def _go_by_notes(episode: Episode, explore: Explore) -> Decision:
    """The compass's way with targets (see :func:`target_notes`): declare a target in view within
    one cell; walk to one in view by the fewest-turns move (the view shows the water between); walk
    to a noted one out of view by the bearing the context shows beside it, with the compass's rule
    (:func:`_move_by_bearing`, to the cell beside it); else explore. The waypoint line on the notepad
    stays as written. With it the compass wins 64.0% / 36.7% on seeds 1000-1299 (with the tour's way:
    64.7% / 38.3%), and every part of it is read off one turn's context and view."""
    here = episode.position
    notes, believed = target_notes(episode)
    waypoint = notepad_waypoint(episode.notepad)
    written = " ".join(part for part in (notes, waypoint_text(waypoint) if waypoint is not None else "") if part)
    calls: list[Call] = []
    if pin_sightings(written, here) != episode.notepad:  # notes written as seen are pinned when stored
        calls.append(("update_notepad", {"text": written}))
    visible = visible_animals(episode)
    seen_text = ("I see " + ", ".join(f"{_a(s)} at ({r}, {c})" for s, (r, c) in visible) + ".") if visible \
        else "I see no animals."
    target = episode.current_target
    if target is None:
        return Decision(f"{seen_text} Every target is found, so I finish.", calls + [("declare_done", {})], "finish")
    spot = believed.get(target)
    if spot is None:
        return explore(episode, calls, notes, seen_text, target)
    if (target, spot) not in visible:
        direction, steps = _move_by_bearing(episode, beside(here, spot), {})
        return Decision(f"{seen_text} The {target} (remembered from my notepad) is at ({spot[0]}, {spot[1]}), "
                        f"{offset_text(here, spot)}. {_move_text(direction, steps)} towards it.",
                        calls + [("move", {"direction": direction, "steps": steps})], "target remembered")
    if within_one(here, spot):  # its cell unsaid: on a first sighting it is not on the notepad yet
        return Decision(f"{seen_text} The {target} is within one cell of me, so I declare it found.",
                        calls + [("declare_found", {"species": target})], "declare")
    move = _move_to_beside(episode, spot)
    if move is None:  # nothing beside it can be reached: look for another
        return explore(episode, calls, notes, seen_text, target)
    direction, steps = move
    return Decision(f"{seen_text} The {target} (in view) is at ({spot[0]}, {spot[1]}), {offset_text(here, spot)}. "
                    f"{_move_text(direction, steps)} towards it.",
                    calls + [("move", {"direction": direction, "steps": steps})], "target in view")


def _explore_by_plan(episode: Episode, calls: list[Call], notepad: str, seen_text: str, target: str) -> Decision:
    """The expert's exploring: a goal with the most unseen ground, its route on the notepad."""
    here = episode.position
    goal, route = notepad_route(episode.notepad)
    if goal is not None and route and _walk(episode, here, route) == goal:
        situation, why = "explore (noted route)", f"I follow the route in my notepad to ({goal[0]}, {goal[1]})."
    else:
        came_from: dict[Cell, tuple[Cell, tuple[str, int]]] = {}
        reach = _turn_search(episode, optimistic=False, came_from=came_from)
        if goal is not None and goal != here and goal in reach:
            situation = "explore (noted goal)"
            why = (f"I am off the route in my notepad, so I go to its goal ({goal[0]}, {goal[1]}), "
                   f"{offset_text(here, goal)}, another way.")
        else:
            goal = _exploration_goal(episode, reach, turn_cost=PLAN_TURN_COST, min_turns=PLAN_MIN_TURNS) \
                or _exploration_goal(episode, reach)
            situation = "explore (new goal)"
            if goal is not None:
                why = (f"The most unexplored ground I can reach is around ({goal[0]}, {goal[1]}), "
                       f"{offset_text(here, goal)}.")
        route = _route_to(came_from, here, goal) if goal is not None else []
    if goal is not None and route:
        (direction, steps), rest = route[0], route[1:]
        planned = " ".join(part for part in (notepad, route_text(goal, rest)) if part)
        calls = [call for call in calls if call[0] != "update_notepad"]
        if planned != episode.notepad:
            calls.insert(0, ("update_notepad", {"text": planned}))
        return Decision(f"{seen_text} I have not seen {_a(target)} yet. {why} {_move_text(direction, steps)} to explore.",
                        calls + [("move", {"direction": direction, "steps": steps})], situation)
    direction = next((d for d, (dr, dc) in MOVES.items() if _passable(episode, (here[0] + dr, here[1] + dc))), "up")
    return Decision(f"{seen_text} No unexplored ground is reachable from here. {_move_text(direction, 1)}.",
                    calls + [("move", {"direction": direction, "steps": 1})], "explore (new goal)")


def _explore_by_sweep(episode: Episode, calls: list[Call], notepad: str, seen_text: str, target: str) -> Decision:
    """The sweeper's exploring (see :func:`sweeper`). Its first sweep heads for the farther side of
    the map from where it starts, its shifts for the farther top or bottom."""
    match = _SWEEP.search(episode.notepad)
    rows, cols = episode.world.size
    row, col = episode.position
    if match:
        heading, shift, again = match.group(1), match.group(2), bool(match.group(3))
    else:
        heading, shift, again = ("right" if col < cols // 2 else "left"), ("down" if row < rows // 2 else "up"), False
    more = ""
    if again and open_steps(episode, shift) and not _edge_in_view(episode, shift):
        move, situation, why = (shift, open_steps(episode, shift)), "explore (sweep on)", f"I shift {shift} once more."
    elif _edge_in_view(episode, heading) or not open_steps(episode, heading):
        situation, blocked = "explore (sweep turn)", heading
        if _edge_in_view(episode, shift):  # swept to the top or bottom: shift the other way from now on
            shift = OPPOSITE[shift]
        if open_steps(episode, shift):
            move = (shift, open_steps(episode, shift))
            if _edge_in_view(episode, heading):  # the row is done: sweep back after shifting twice
                heading, more = OPPOSITE[heading], " again"
            why = f"My way {blocked} ends here, so I shift {shift}."
        else:
            heading = OPPOSITE[heading]
            move = (heading, open_steps(episode, heading)) if open_steps(episode, heading) else (shift, 1)
            why = f"I cannot shift {shift}, so I turn {heading}."
    else:
        move, situation, why = (heading, open_steps(episode, heading)), "explore (sweep on)", f"I sweep {heading}."
    planned = " ".join(part for part in (notepad, sweep_text(heading, shift, again=bool(more))) if part)
    calls = [call for call in calls if call[0] != "update_notepad"]
    if planned != episode.notepad:
        calls.insert(0, ("update_notepad", {"text": planned}))
    return Decision(f"{seen_text} I have not seen {_a(target)} yet. {why} {_move_text(*move)} to explore.",
                    calls + [("move", {"direction": move[0], "steps": move[1]})], situation)


def _explore_by_tour(episode: Episode, calls: list[Call], notepad: str, seen_text: str, target: str, *,
                     move: MoveRule | None = None) -> Decision:
    """The tour's exploring (see :func:`tour`); ``move`` picks the move towards the waypoint
    (default :func:`_move_towards`; the compass's :func:`_move_by_bearing`)."""
    here = episode.position
    round_ = tour_waypoints(episode.world.size)
    waypoint = notepad_waypoint(episode.notepad)
    situation, why = "explore (waypoint on)", ""
    if waypoint not in round_:
        waypoint = min(round_, key=lambda cell: (abs(cell[0] - here[0]) + abs(cell[1] - here[1]), cell))
        situation, why = "explore (waypoint next)", f"I start my round of waypoints at the nearest, ({waypoint[0]}, {waypoint[1]})."
    # one turn search, from the waypoint (turns from it are turns to it): here in it = reachable. A
    # waypoint on water or rock still spreads the search along its lines, so the tour walks up to it.
    # It goes on past one waypoint a turn for being within reach: the context marks only the noted
    # one "reached" (bearings.waypoint_bearing), so a learner sees that one and no more; if the next
    # is within reach too, the next turn says so (seeds 1000-1299, with the farther-way tie-break of
    # _move_towards: 75.7% / 43.0% against 75.7% / 45.0% skipping every waypoint in reach at once).
    # The compass's move reads the turn alone, so it needs only whether the waypoint can be reached:
    # a walk of single steps answers that as the turn search would (a move is single steps over open
    # cells), at a fraction of its cost (the search was most of the time the compass's rows took).
    from_waypoint: dict[Cell, tuple[int, tuple[str, int]]] | None = None
    passed_one = reachable = False
    for _ in round_:
        at_waypoint = here == waypoint or (within_reach(here, waypoint) and not passed_one)
        if not at_waypoint:
            if move is None:
                from_waypoint = _turn_search(episode, optimistic=True, start=waypoint)
                reachable = here in from_waypoint
            else:
                reachable = _connected(episode, waypoint, here)
            if reachable:
                break
            from_waypoint = None
        passed_one = passed_one or at_waypoint
        reached = waypoint
        waypoint = round_next(round_, waypoint)
        situation = "explore (waypoint next)"
        why = (f"I am at my waypoint ({reached[0]}, {reached[1]}), so I go on to the next, "
               f"({waypoint[0]}, {waypoint[1]}).") if at_waypoint else \
              (f"I cannot reach my waypoint ({reached[0]}, {reached[1]}), so I go on to the next, "
               f"({waypoint[0]}, {waypoint[1]}).")
    planned = " ".join(part for part in (notepad, waypoint_text(waypoint)) if part)
    calls = [call for call in calls if call[0] != "update_notepad"]
    if pin_sightings(planned, here) != episode.notepad:  # notes written as seen are pinned when stored
        calls.insert(0, ("update_notepad", {"text": planned}))
    if not reachable:  # walled in: no waypoint reachable (or a map one view wide)
        direction = next((d for d, (dr, dc) in MOVES.items() if _passable(episode, (here[0] + dr, here[1] + dc))), "up")
        return Decision(f"{seen_text} No unexplored ground is reachable from here. {_move_text(direction, 1)}.",
                        calls + [("move", {"direction": direction, "steps": 1})], situation)
    direction, steps = move(episode, waypoint, {}) if move is not None else \
        _move_towards(episode, waypoint, from_waypoint or {})
    where = f"My waypoint is ({waypoint[0]}, {waypoint[1]}), {offset_text(here, waypoint)}."
    return Decision(" ".join(part for part in (seen_text, f"I have not seen {_a(target)} yet.", why, where,
                                                f"{_move_text(direction, steps)} to explore.") if part),
                    calls + [("move", {"direction": direction, "steps": steps})], situation)


def _move_towards(episode: Episode, goal: Cell, from_goal: dict[Cell, tuple[int, tuple[str, int]]]) -> tuple[str, int]:
    """The move on a fewest-turns way to ``goal`` that walks the most steps (``from_goal``: the turn
    search from it, unseen ground counted open): the search's own first move from here can be one
    step of a leg it could walk whole. Where moves tie in turns and steps, the one along the way the
    goal lies farther goes first (bearings.farther_way), then the fixed order of MOVES: a learner
    reads the farther way off the bearing, where a fixed order (up first) made "4 up 13 right"
    with every way open a move up (the tour wins the same: 76.0% / 45.0% on seeds 1000-1299
    against 75.7% / 45.0%)."""
    # Some move lands in ``from_goal`` (or on the goal): it is asked only from a cell the search
    # reached, and the cells of the search's last leg to here are in view, so seen open.
    here = episode.position
    farther = farther_way(here, goal)
    ways = []
    for direction, (dr, dc) in MOVES.items():
        for steps in range(1, open_steps(episode, direction) + 1):
            landing = (here[0] + dr * steps, here[1] + dc * steps)
            turns = 0 if landing == goal else from_goal[landing][0] if landing in from_goal else None
            if turns is not None:
                ways.append((turns, -steps, direction != farther, list(MOVES).index(direction), (direction, steps)))
    return min(ways)[-1]


_SIDEWAYS = {"up": ("left", "right"), "down": ("left", "right"), "left": ("up", "down"), "right": ("up", "down")}
COMPASS_LONG_MOVE = 3  # a way open this far (or as far as the waypoint lies that way) is worth a turn


def _move_by_bearing(episode: Episode, goal: Cell, from_goal: dict[Cell, tuple[int, tuple[str, int]]]) -> tuple[str, int]:
    """The compass's move towards ``goal`` from one turn's context alone (``from_goal`` unused: it
    is the tour's search). The ways in order: the way the goal lies farther, the other way of its
    bearing (each as many steps as the goal lies that way, as far as open), the two sideways of the
    farther way (the more open first, as far as open), then back. It takes the first that does not
    undo the last move and walks a long move (:data:`COMPASS_LONG_MOVE` steps, or all the way to the
    goal's row or col); else the first open one that does not undo the last move; else any open
    one. Taking any open way first won 61.7% / 34.7% on seeds 1000-1299 (short moves along the
    bearing waste turns); a long move first 64.7% / 38.3% (at least 4 steps: 62.3% / 36.0%)."""
    here = episode.position
    parts = sorted(offset_parts(here, goal), key=lambda part: -part[0])  # stable: rows first on a tie
    lies = {direction: count for count, direction, _ in parts}
    opened = {direction: open_steps(episode, direction) for direction in MOVES}
    farther = parts[0][1] if parts else "up"
    sideways = sorted(_SIDEWAYS[farther], key=lambda d: (-opened[d], list(MOVES).index(d)))
    order = dict.fromkeys([*lies, *sideways, OPPOSITE[farther]])  # each way once, in this order
    open_ways = [(d, min(opened[d], lies.get(d, MAX_STEPS))) for d in order if opened[d] >= 1]
    undo = OPPOSITE.get(last_move(episode) or "")
    onward = [way for way in open_ways if way[0] != undo]
    long_ones = [way for way in onward if way[1] >= COMPASS_LONG_MOVE or way[1] == lies.get(way[0])]
    return next(iter(long_ones + onward + open_ways), (farther, 1))


def last_move(episode: Episode) -> str | None:
    """The direction of the move the last turn played (None without one)."""
    for run in episode.last_runs:
        if run.name == "move" and run.ok:
            return str(run.arguments.get("direction"))
    return None


def view_route(episode: Episode, goal: Cell) -> tuple[str, int] | None:
    """The move the tour would make towards ``goal`` knowing only the cells in view now (the rest
    counted open): the longest move on a fewest-turns way. None when ``goal`` is where the agent
    stands or no way is open. What the route lesson asks of a learner (route.py): one view and one
    bearing hold all it needs, and on the tour's exploring turns it is the tour's own move on 95%
    of them (the tour also remembers cells seen earlier). None too for a goal off the map."""
    here = episode.position
    if goal == here or not episode.world.inside(goal):
        return None
    from_goal = _turn_search(episode, optimistic=True, start=goal, known=set(episode.view_cells()))
    if here not in from_goal:
        return None
    return _move_towards(episode, goal, from_goal)


def tour_waypoints(size: tuple[int, int]) -> list[Cell]:
    """The tour's round: waypoints where lanes at most LANE_GAP cells apart cross (a 10x10 view from
    each covers the map), in an order that ends beside where it began, so the round can start
    anywhere. With an even number of row lanes: along the top lane, then snaking through the others
    leaving the first column free, then up that column; with an odd number of row lanes and an even
    number of col lanes, the same with rows and cols swapped (both odd: the last leg is long)."""
    rows, cols = (_lanes(n) for n in size)
    if len(rows) % 2 and len(cols) % 2 == 0:
        return [(r, c) for c, r in _round(cols, rows)]
    return _round(rows, cols)


def _lanes(n: int) -> list[int]:
    """Rows (or cols) of lanes whose views cover 0..n-1: evenly spread, at most LANE_GAP apart."""
    first, last = VIEW_BEFORE, n - VIEW + VIEW_BEFORE
    if last <= first:
        return [min(VIEW_BEFORE, n - 1)]
    count = -(-(last - first) // LANE_GAP) + 1
    return [round(first + i * (last - first) / (count - 1)) for i in range(count)]


def _round(rows: list[int], cols: list[int]) -> list[Cell]:
    """The round over these lanes (see :func:`tour_waypoints`)."""
    if len(rows) < 2 or len(cols) < 2:  # one lane: there and back
        line = [(r, c) for r in rows for c in cols]
        return line + line[-2:0:-1]
    cells = [(rows[0], c) for c in cols]
    for i, r in enumerate(rows[1:], start=1):
        cells += [(r, c) for c in (cols[:0:-1] if i % 2 else cols[1:])]
    return cells + [(r, cols[0]) for r in rows[:0:-1]]


def waypoint_text(waypoint: Cell) -> str:
    """The tour's notepad line: "Waypoint (12, 20)."."""
    return f"Waypoint ({waypoint[0]}, {waypoint[1]})."


def notepad_waypoint(notepad: str) -> Cell | None:
    """The waypoint a notepad holds (None without one)."""
    match = WAYPOINT.search(notepad)
    return (int(match.group(1)), int(match.group(2))) if match else None


def round_next(round_: list[Cell], waypoint: Cell) -> Cell:
    """The waypoint after ``waypoint`` in ``round_`` (which closes on itself)."""
    return round_[(round_.index(waypoint) + 1) % len(round_)]


def heading_waypoint(waypoint: Cell, here: Cell, size: tuple[int, int]) -> Cell:
    """The waypoint the tour heads for when its notepad holds ``waypoint``: that one, or the round's
    next once ``here`` is within reach of it (the round is the same for every map of a ``size``).
    The tour itself also skips a waypoint it cannot reach; this reads only the notepad and where
    the agent stands (what the route stage asks about, route.py)."""
    round_ = tour_waypoints(size)
    if waypoint in round_ and within_reach(here, waypoint):
        return round_next(round_, waypoint)
    return waypoint


def sweep_text(heading: str, shift: str, *, again: bool = False) -> str:
    """The sweeper's notepad line: "Sweep right, shift down." (", shift down again." after a row)."""
    return f"Sweep {heading}, shift {shift}{' again' if again else ''}."


def notepad_sweep(notepad: str) -> str:
    """The sweep line a notepad holds ("" without one)."""
    match = _SWEEP.search(notepad)
    return match.group(0) if match else ""


_SWEEP = re.compile(r"\bSweep (up|down|left|right), shift (up|down|left|right)( again)?\.")
OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}


def open_steps(episode: Episode, direction: str) -> int:
    """How many steps (up to 4) the cells in view show open that way."""
    dr, dc = MOVES[direction]
    row, col = episode.position
    steps = 0
    while steps < MAX_STEPS and _passable(episode, (row + dr * (steps + 1), col + dc * (steps + 1))):
        steps += 1
    return steps


def _edge_in_view(episode: Episode, direction: str) -> bool:
    """The map's edge shows in the view that way (black cells): nothing new lies beyond."""
    rows, cols = episode.world.size
    row, col = episode.position
    return {"right": col + VIEW - VIEW_BEFORE >= cols, "left": col - VIEW_BEFORE < 0,
            "down": row + VIEW - VIEW_BEFORE >= rows, "up": row - VIEW_BEFORE < 0}[direction]


def _passable(episode: Episode, cell: Cell, *, optimistic: bool = False) -> bool:
    """Land without an animal, as far as the agent knows (unseen cells count only when optimistic)."""
    world = episode.world
    if not world.inside(cell):
        return False
    if cell not in episode.seen:
        return optimistic
    return world.ground(cell) == LAND and world.animal_at(cell) is None


def _walk(episode: Episode, here: Cell, moves: list[tuple[str, int]]) -> Cell | None:
    """Where these moves end over cells known passable; None when one of them is not open."""
    for direction, steps in moves:
        dr, dc = MOVES[direction]
        if not 1 <= steps <= MAX_STEPS or \
                not all(_passable(episode, (here[0] + dr * k, here[1] + dc * k)) for k in range(1, steps + 1)):
            return None
        here = (here[0] + dr * steps, here[1] + dc * steps)
    return here


def _route_to(came_from: dict[Cell, tuple[Cell, tuple[str, int]]], here: Cell, goal: Cell) -> list[tuple[str, int]]:
    """The moves from ``here`` to ``goal`` along the search's tree (``_turn_search(came_from=)``)."""
    moves = []
    cell = goal
    while cell != here:
        cell, move = came_from[cell]
        moves.append(move)
    return moves[::-1]


def _turn_search(episode: Episode, *, optimistic: bool,
                 came_from: dict[Cell, tuple[Cell, tuple[str, int]]] | None = None,
                 start: Cell | None = None, known: set[Cell] | None = None) -> dict[Cell, tuple[int, tuple[str, int]]]:
    """Every cell reachable by moves (1-4 steps in one direction over passable cells), with the
    fewest turns it takes and the first move on the way, from ``start`` (the agent's cell by
    default; a move walked back is a move, so turns from a cell are turns to it). Breadth first in a fixed order, so ties
    always resolve the same way. Turns, not steps, are what a mission runs out of. ``came_from``,
    when given, is filled with each cell's previous cell and the move from it (for routes).
    ``known``: the cells whose ground counts (default every cell seen so far; the rest are open
    only when ``optimistic``)."""
    world = episode.world
    rows, cols = world.size
    # cells as indexes into a grid padded with one closed cell all round (no bounds checks, no
    # tuples in the inner loop: this search is most of the expert's time)
    width = cols + 2
    walkable = bytearray([1 if optimistic else 0]) * ((rows + 2) * width)
    for r in range(rows + 2):
        walkable[r * width] = walkable[r * width + width - 1] = 0
    walkable[:width] = bytes(width)
    walkable[(rows + 1) * width:] = bytes(width)
    for r, c in (episode.seen if known is None else known):
        walkable[(r + 1) * width + c + 1] = world.ground((r, c)) == LAND and world.animal_at((r, c)) is None
    start_cell = episode.position if start is None else start
    start = (start_cell[0] + 1) * width + start_cell[1] + 1
    visited = bytearray(len(walkable))
    visited[start] = 1
    turns_of = [0] * len(walkable)
    first_of: list[tuple[str, int] | None] = [None] * len(walkable)
    parent_of: dict[int, tuple[int, tuple[str, int]]] | None = {} if came_from is not None else None
    order: list[int] = []
    queue = deque([start])
    deltas = [(direction, dr * width + dc) for direction, (dr, dc) in MOVES.items()]
    while queue:
        index = queue.popleft()
        turns, first = turns_of[index] + 1, first_of[index]
        for direction, delta in deltas:
            nxt = index
            for steps in range(1, MAX_STEPS + 1):
                nxt += delta
                if not walkable[nxt]:
                    break
                if visited[nxt]:
                    continue
                visited[nxt] = 1
                turns_of[nxt], first_of[nxt] = turns, first or (direction, steps)
                if parent_of is not None:
                    parent_of[nxt] = (index, (direction, steps))
                order.append(nxt)
                queue.append(nxt)
    if parent_of is not None:  # only when came_from was given
        came_from.update({(i // width - 1, i % width - 1): ((p // width - 1, p % width - 1), move)
                          for i, (p, move) in parent_of.items()})
    return {(index // width - 1, index % width - 1): (turns_of[index], first_of[index]) for index in order}


def _connected(episode: Episode, start: Cell, goal: Cell) -> bool:
    """Whether ``goal`` is among the cells :func:`_turn_search` (optimistic) reaches from ``start``:
    a flood of single steps over cells passable as far as the agent knows (unseen counted open),
    spreading from ``start`` even where it is itself closed, as the search does."""
    world, seen = episode.world, episode.seen

    def open_cell(cell: Cell) -> bool:
        return world.inside(cell) and (cell not in seen or (world.ground(cell) == LAND and world.animal_at(cell) is None))

    return any(cell == goal for cell in flood(start, open_cell))


def _exploration_goal(episode: Episode, reach: dict[Cell, tuple[int, tuple[str, int]]], *,
                      turn_cost: float = TURN_COST, min_turns: int = 1) -> Cell | None:
    """The reachable known cell at least ``min_turns`` away whose view would show the most unseen
    cells, less ``turn_cost`` per turn away."""
    rows, cols = episode.world.size
    # unseen cells summed over any rectangle with an integral image
    total = [[0] * (cols + 1) for _ in range(rows + 1)]
    for r in range(rows):
        running = 0
        for c in range(cols):
            running += (r, c) not in episode.seen
            total[r + 1][c + 1] = total[r][c + 1] + running
    best, best_score = None, 0
    for (r, c), (turns, _move) in reach.items():
        if turns < min_turns:
            continue
        top, left = max(0, r - VIEW_BEFORE), max(0, c - VIEW_BEFORE)
        bottom, right = min(rows, r - VIEW_BEFORE + VIEW), min(cols, c - VIEW_BEFORE + VIEW)
        unseen = total[bottom][right] - total[top][right] - total[bottom][left] + total[top][left]
        score = unseen - turn_cost * turns
        if unseen and score > best_score:
            best, best_score = (r, c), score
    return best


# -- the baselines -----------------------------------------------------------------------------
def greedy(episode: Episode) -> Decision:
    """Walks straight at the current target while it is in view; otherwise wanders at random. No memory."""
    rng = random.Random(f"greedy-{episode.mission.id}-{episode.turn}")
    here = episode.position
    target = episode.current_target
    if target is None:
        return Decision("Every target is found, so I finish.", [("declare_done", {})])
    spots = sorted((cell for species, cell in visible_animals(episode) if species == target),
                   key=lambda cell: abs(cell[0] - here[0]) + abs(cell[1] - here[1]))
    stuck = any(run.name == "move" and " 0 of " in run.result for run in episode.last_runs)
    if spots and within_one(here, spots[0]):
        return Decision(f"The {target} is next to me, so I declare it found.",
                        [("declare_found", {"species": target})])
    if spots and not stuck:
        dr, dc = spots[0][0] - here[0], spots[0][1] - here[1]
        if abs(dr) >= abs(dc):
            direction, steps = ("down" if dr > 0 else "up"), abs(dr) - (1 if abs(dc) <= 1 else 0)
        else:
            direction, steps = ("right" if dc > 0 else "left"), abs(dc) - (1 if abs(dr) <= 1 else 0)
        steps = min(MAX_STEPS, max(1, steps))
        return Decision(f"I see the {target}. {_move_text(direction, steps)} towards it.",
                        [("move", {"direction": direction, "steps": steps})])
    direction = rng.choice(list(MOVES))
    return Decision(f"No {target} in view. {_move_text(direction, MAX_STEPS)} to look around.",
                    [("move", {"direction": direction, "steps": MAX_STEPS})])


def random_policy(episode: Episode) -> Decision:
    """Moves at random and now and then declares a random species found."""
    rng = random.Random(f"random-{episode.mission.id}-{episode.turn}")
    target = episode.current_target
    if target is None:
        return Decision("Every target is found, so I finish.", [("declare_done", {})])
    if rng.random() < 0.25:
        species = rng.choice(SPECIES)
        return Decision(f"Maybe {_a(species)} is next to me.", [("declare_found", {"species": species})])
    direction, steps = rng.choice(list(MOVES)), rng.randint(1, MAX_STEPS)
    return Decision(f"{_move_text(direction, steps)} at random.", [("move", {"direction": direction, "steps": steps})])


POLICIES: dict[str, Policy] = {"random": random_policy, "greedy": greedy, "expert": expert, "sweeper": sweeper,
                                 "tour": tour, "compass": compass}
TEACHERS = ("expert", "sweeper", "tour", "compass")  # the scripted players whose turns a model is trained on
CHECKS_NOTES_BY_SIGHT = (compass,)  # teachers that check the notepad's notes against the view (dagger.expert_label)


def get_policy(name: str) -> Policy:
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r} (expected one of {', '.join(POLICIES)})")
    return POLICIES[name]


def get_teacher(name: str) -> Policy:
    """A teacher by name: what generates training rows, labels DAgger states and is the reference
    of agreement."""
    if name not in TEACHERS:
        raise ValueError(f"unknown teacher {name!r} (expected one of {', '.join(TEACHERS)})")
    return POLICIES[name]
