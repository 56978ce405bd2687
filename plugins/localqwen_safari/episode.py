"""One mission being played: the agent's position, turns, notepad, what it has found, and the
four tools it acts through.

A turn is a list of tool calls (``(name, arguments)``); each runs through the runtime's
:func:`~localqwen.runtime.tool_loop.run_tool`, so unknown tools and arguments that don't fit the
schema come back as ``error: ...`` results, exactly as a model would read them. Any policy (the
scripted ones, a person, a model) plays through :meth:`Episode.play_turn`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from localqwen.runtime.tool_loop import Tool, ToolError, ToolRun, run_tool
from localqwen_safari.bearings import pin_sightings, with_bearings
from localqwen_safari.missions import Mission
from localqwen_safari.world import MOVES, SPECIES, Cell, World, within_one

VIEW = 10  # the agent sees VIEW x VIEW cells ...
VIEW_BEFORE = 4  # ... from 4 cells above/left of it to 5 below/right (it is at view row 4, col 4)
MAX_STEPS = 4
NOTEPAD_LIMIT = 400

Call = tuple[str, dict[str, Any]]


def tool_schemas() -> list[dict[str, Any]]:
    """The four tools in the Qwen / OpenAI ``tools=[...]`` shape (what the chat template renders)."""
    return [tool.schema() for tool in _tool_specs(lambda name: lambda **_: None)]


def _tool_specs(bind: Any) -> list[Tool]:
    """The tools with their JSON schemas; ``bind(name)`` gives each one's function."""
    return [
        Tool("move", f"Walk 1 to {MAX_STEPS} steps in one direction (no diagonals). Water, rock, animals "
                     "and the map's edge stop you; the result says where you ended up and why you stopped.",
             {"type": "object",
              "properties": {"direction": {"type": "string", "enum": list(MOVES)},
                             "steps": {"type": "integer", "minimum": 1, "maximum": MAX_STEPS}},
              "required": ["direction", "steps"]},
             bind("move")),
        Tool("update_notepad", "Replace your notepad (kept between turns) with this text: what you saw and where. "
                               "A sighting written relative to you ('zebra 3 down 2 right') is kept with its map "
                               "cell ('zebra at (8, 15)'); your context shows each one's bearing from you.",
             {"type": "object",
              "properties": {"text": {"type": "string", "maxLength": NOTEPAD_LIMIT}},
              "required": ["text"]},
             bind("update_notepad")),
        Tool("declare_found", "Say you found the target species; you must be within one cell of it "
                              "(diagonals count). With two targets, find them in the mission's order.",
             {"type": "object",
              "properties": {"species": {"type": "string", "enum": list(SPECIES)}},
              "required": ["species"]},
             bind("declare_found")),
        Tool("declare_done", "End the mission (after declaring every target found).",
             {"type": "object", "properties": {}}, bind("declare_done")),
    ]


@dataclass
class Episode:
    mission: Mission
    world: World
    position: Cell = (0, 0)
    turn: int = 0  # turns played so far
    notepad: str = ""
    found: list[str] = field(default_factory=list)
    done: bool = False
    outcome: str = ""  # "success", "gave up early", "out of turns"
    path: list[Cell] = field(default_factory=list)
    seen: set[Cell] = field(default_factory=set)  # every cell that has been in the agent's view
    last_runs: list[ToolRun] = field(default_factory=list)
    calls: int = 0
    valid_calls: int = 0
    declares: int = 0
    false_declares: int = 0
    _moved_this_turn: bool = False

    @classmethod
    def start(cls, mission: Mission) -> Episode:
        world = mission.world()
        episode = cls(mission, world, position=world.start, path=[world.start])
        episode._look()
        return episode

    # -- what the agent knows ----------------------------------------------------------------
    @property
    def success(self) -> bool:
        return self.done and self.outcome == "success"

    @property
    def current_target(self) -> str | None:
        left = [target for target in self.mission.targets if target not in self.found]
        return left[0] if left else None

    def view_origin(self) -> Cell:
        return (self.position[0] - VIEW_BEFORE, self.position[1] - VIEW_BEFORE)

    def view_cells(self) -> list[Cell]:
        """The cells of the view that lie on the map, row by row."""
        top, left = self.view_origin()
        return [(r, c) for r in range(top, top + VIEW) for c in range(left, left + VIEW) if self.world.inside((r, c))]

    def notepad_for_reading(self) -> str:
        """The notepad as the context shows it: each sighting with its bearing from here (bearings.py)."""
        return with_bearings(self.notepad, self.position) if self.notepad else "(empty)"

    def context_text(self, *, show_notepad: bool = True) -> str:
        """The text the agent reads beside its view image."""
        row, col = self.position
        lines = [f"Mission ({self.mission.kind}): {self.mission.describe()}",
                 f"Turn {self.turn + 1} of {self.mission.max_turns}.",
                 f"You are at row {row}, col {col} (the red cell at row {VIEW_BEFORE}, col {VIEW_BEFORE} of your "
                 f"{VIEW}x{VIEW} view; rows grow downwards, cols to the right).",
                 "Found so far: " + (", ".join(self.found) if self.found else "nothing") + ".",
                 "Notepad: " + (self.notepad_for_reading() if show_notepad else "(hidden)")]
        if self.last_runs:
            lines.append("Results of your last tool calls:")
            lines += [f"- {run.name}({_args_text(run.arguments)}): {run.result}" for run in self.last_runs]
        elif self.turn:
            lines.append("Your last turn made no tool call.")
        return "\n".join(lines)

    def compact_context(self, *, show_notepad: bool = True) -> str:
        """The same facts in far fewer tokens, for a tiny model trained from scratch (the
        ``compact`` prompt profile): mission, turn, position, finds, notepad, last results, the
        species to find now. The notepad with each sighting's and the waypoint's bearing
        (bearings.with_bearings), as the full context shows it: walking back to a noted target
        without it takes two-digit subtraction, which a tiny model does not learn (docs/safari_learning.md,
        "Notes as seen")."""
        row, col = self.position
        lines = [f"{self.mission.kind}: {' then '.join(self.mission.targets)}. Turn {self.turn + 1}/"
                 f"{self.mission.max_turns}. At ({row}, {col}). Found: {', '.join(self.found) or 'nothing'}.",
                 "Notepad: " + (self.notepad_for_reading() if show_notepad else "(hidden)")]
        lines += [f"{run.name}: {run.result}" for run in self.last_runs]
        if self.turn and not self.last_runs:
            lines.append("No tool call.")
        # The species to find now, last: the compact profile puts the view image right after it,
        # so each cell's image token can read which species is asked
        # (docs/safari_learning.md, "Marking the target").
        lines.append(f"Find: {self.current_target}." if self.current_target else "Find: nothing more.")
        return "\n".join(lines)

    # -- playing -------------------------------------------------------------------------------
    def play_turn(self, calls: list[Call]) -> list[ToolRun]:
        """Run one turn's calls in order; a turn without a call is a wasted turn."""
        if self.done:
            raise RuntimeError("the episode is over")
        self._moved_this_turn = False
        tools = _tool_specs(self._bind)
        runs = []
        for name, arguments in calls:
            if self.done:
                run = ToolRun(name, arguments if isinstance(arguments, dict) else {}, "error: the mission is already over", False)
            else:
                run = run_tool(tools, name, arguments)
            runs.append(run)
            self.calls += 1
            self.valid_calls += run.ok
        if not calls:
            self.calls += 1  # a reply without a call counts as one invalid call
        self.turn += 1
        self.last_runs = runs
        self._look()
        if not self.done and self.turn >= self.mission.max_turns:
            self.done, self.outcome = True, "out of turns"
        return runs

    def _look(self) -> None:
        self.seen.update(self.view_cells())

    def _bind(self, name: str) -> Any:
        return getattr(self, f"_tool_{name}")

    # -- the tools -----------------------------------------------------------------------------
    def _tool_move(self, direction: str, steps: int) -> str:
        if self._moved_this_turn:
            raise ToolError("only one move per turn")
        self._moved_this_turn = True
        drow, dcol = MOVES[direction]
        walked = 0
        stop = ""
        for _ in range(steps):
            nxt = (self.position[0] + drow, self.position[1] + dcol)
            blocker = self.world.blocker(nxt)
            if blocker is not None:
                stop = f"; stopped by {blocker} at row {nxt[0]}, col {nxt[1]}" if blocker != "the edge of the map" \
                    else "; stopped by the edge of the map"
                break
            self.position = nxt
            self.path.append(nxt)
            walked += 1
        here = f"now at row {self.position[0]}, col {self.position[1]}"
        if walked == steps:
            return f"moved {direction} {walked} step{'s' * (walked != 1)}, {here}"
        return f"moved {direction} {walked} of {steps} steps, {here}{stop}"

    def _tool_update_notepad(self, text: str) -> str:
        self.notepad = pin_sightings(text, self.position)
        return f"notepad updated ({len(text)} characters)"

    def _tool_declare_found(self, species: str) -> str:
        self.declares += 1
        try:
            return self._check_found(species)
        except ToolError:
            self.false_declares += 1
            raise

    def _check_found(self, species: str) -> str:
        if species not in self.mission.targets:
            raise ToolError(f"the {species} is not a target of this mission")
        if species in self.found:
            raise ToolError(f"the {species} was already found")
        if species != self.current_target:
            raise ToolError(f"find the {self.current_target} first")
        row, col = self.position
        for animal in self.world.animals:
            if animal.species == species and within_one(animal.cell, (row, col)):
                self.found.append(species)
                return f"found the {species} at row {animal.row}, col {animal.col}"
        raise ToolError(f"no {species} within one cell of row {row}, col {col}")

    def _tool_declare_done(self) -> str:
        self.done = True
        left = [target for target in self.mission.targets if target not in self.found]
        if not left:
            self.outcome = "success"
            return "mission complete"
        self.outcome = "gave up early"
        return "mission over: not found " + ", ".join(left)


def _args_text(arguments: dict[str, Any]) -> str:
    import json

    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items())
