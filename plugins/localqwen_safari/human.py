"""A person playing a mission: the session the TUI (keys) and the web view (buttons) both drive.

Each move or declaration is one turn, played through the same tools and rules as any policy. A
notepad edit waits and goes out as the first call of the next turn, the way an agent writes its
notepad beside a move, so writing notes costs no turn. The game is recorded like any other
episode: it can be saved, replayed and exported as a GIF.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from localqwen_safari.episode import Call, Episode
from localqwen_safari.episode_file import EpisodeLog
from localqwen_safari.missions import Mission, mission_for_seed
from localqwen_safari.render import render_map, render_view
from localqwen_safari.replay import Frame, frame_after_turn
from localqwen_safari.world import MOVES

HUMAN = "human"
ACTIONS = (*MOVES, "found", "done", "notepad")


@dataclass
class HumanState:
    """What a frontend shows between turns: the view and map as they are now, and the words."""

    mission: str
    view: bytes  # PNG, the player's view now
    map: bytes  # PNG, the map with the path so far; cells never seen (and their animals) hidden
    context: str  # what an agent would read now
    turn: int  # turns played
    max_turns: int
    position: tuple[int, int]
    notepad: str
    pending_notepad: str | None  # written, goes out with the next turn
    found: list[str]
    results: list[str] = field(default_factory=list)  # the last turn's calls and what came of them
    done: bool = False
    outcome: str = ""

    def status(self) -> str:
        found = ", ".join(self.found) or "nothing"
        line = f"Turn {self.turn}/{self.max_turns} · at row {self.position[0]}, col {self.position[1]} · found: {found}"
        return line + (f" · {self.outcome}" if self.done else "")


class HumanPlay:
    def __init__(self, mission: Mission) -> None:
        self.episode = Episode.start(mission)
        self.log = EpisodeLog(mission, HUMAN)
        self.frames: list[Frame] = []
        self.pending_notepad: str | None = None

    @classmethod
    def for_seed(cls, kind: str, seed: int) -> HumanPlay:
        return cls(mission_for_seed(kind, seed))

    @property
    def done(self) -> bool:
        return self.episode.done

    # -- actions: each one (except the notepad) is a turn ------------------------------------------
    def apply(self, action: str, text: str = "") -> HumanState:
        """``up`` / ``down`` / ``left`` / ``right`` (one step), ``found`` (the current target),
        ``done``, or ``notepad`` with ``text``; returns the state after it."""
        if action in MOVES:
            self.move(action)
        elif action == "found":
            self.declare_found()
        elif action == "done":
            self.declare_done()
        elif action == "notepad":
            self.write_notepad(text)
        else:
            raise ValueError(f"unknown action {action!r} (expected one of {', '.join(ACTIONS)})")
        return self.state()

    def move(self, direction: str, steps: int = 1) -> None:
        self._turn([("move", {"direction": direction, "steps": steps})])

    def declare_found(self, species: str | None = None) -> None:
        """Declare ``species`` found (by default the target the mission asks for now)."""
        target = species or self.episode.current_target or self.episode.mission.targets[-1]
        self._turn([("declare_found", {"species": target})])

    def declare_done(self) -> None:
        self._turn([("declare_done", {})])

    def write_notepad(self, text: str) -> None:
        self._check_playing()
        self.pending_notepad = text

    def _turn(self, calls: list[Call]) -> None:
        self._check_playing()
        if self.pending_notepad is not None:
            calls = [("update_notepad", {"text": self.pending_notepad}), *calls]
            self.pending_notepad = None
        context, view = self.episode.context_text(), render_view(self.episode)
        runs = self.episode.play_turn(calls)
        record = self.log.add_turn("", calls, runs, self.episode)
        if self.episode.done:
            self.log.finish(self.episode)
        self.frames.append(frame_after_turn(self.episode, view, context, record))

    def _check_playing(self) -> None:
        if self.episode.done:
            raise ValueError(f"the mission is over ({self.episode.outcome}); start a new one")

    # -- what to show, what to keep ----------------------------------------------------------------
    def state(self) -> HumanState:
        episode = self.episode
        results = self.frames[-1].call_lines() if self.frames else []
        # the player's map hides what it has not seen (a spectator's map, in the frames, shows all)
        return HumanState(episode.mission.describe(), render_view(episode), render_map(episode, fog=True),
                          episode.context_text(), episode.turn, episode.mission.max_turns, episode.position,
                          episode.notepad, self.pending_notepad, list(episode.found), results, episode.done,
                          episode.outcome)

    def save(self, path: str | Path) -> Path:
        """Write the game as an episode file (replayable); only once it is over."""
        if not self.episode.done:
            raise ValueError("the mission is not over yet: declare done (or run out of turns) before saving")
        return self.log.save(path)
