"""Episodes as frames to watch: play a policy (recording it) or replay a saved episode, checking
every turn against the world.

A :class:`Frame` is one turn as a viewer shows it: the view the player saw when it chose, the
whole map with the path after the turn, the Thought, the tool calls with their results, and the
notepad, position and finds after it. The TUI, the web view and the GIF exporter all draw frames.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from localqwen_safari.episode import Episode
from localqwen_safari.episode_file import EpisodeFileError, EpisodeLog, TurnRecord
from localqwen_safari.missions import Mission
from localqwen_safari.playing import play_turns
from localqwen_safari.policies import Policy
from localqwen_safari.render import render_map, render_view


@dataclass
class Frame:
    turn: int  # 1-based
    max_turns: int
    mission: str  # what the mission asks, in words
    view: bytes  # PNG: what the player saw when it chose this turn's calls
    map: bytes  # PNG: the whole map with the path walked, after the turn
    context: str  # the text the player read with the view
    thought: str
    calls: list[dict[str, Any]]  # name, arguments, result, ok
    notepad: str
    position: tuple[int, int]
    found: list[str] = field(default_factory=list)
    done: bool = False
    outcome: str = ""

    def call_lines(self) -> list[str]:
        """Each call as ``name(arg=value) -> result``; a turn without a call says so."""
        if not self.calls:
            return ["(no tool call: a wasted turn)"]
        return [f"{call['name']}({arguments_text(call['arguments'])}) -> {call['result']}" for call in self.calls]

    def status(self) -> str:
        found = ", ".join(self.found) or "nothing"
        line = f"Turn {self.turn}/{self.max_turns} · at row {self.position[0]}, col {self.position[1]} · found: {found}"
        return line + (f" · {self.outcome}" if self.done else "")


def arguments_text(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return json.dumps(arguments, ensure_ascii=False)
    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items())


def frame_after_turn(episode: Episode, view: bytes, context: str, record: TurnRecord) -> Frame:
    return Frame(record.turn, episode.mission.max_turns, episode.mission.describe(), view, render_map(episode),
                 context, record.thought, record.calls, episode.notepad, episode.position, list(episode.found),
                 episode.done, episode.outcome)


def record_play(mission: Mission, policy: Policy, policy_name: str) -> Iterator[tuple[Frame, EpisodeLog]]:
    """Play ``policy`` on ``mission``; after each turn yield its frame and the log so far (finished
    once the episode is over)."""
    episode = Episode.start(mission)
    log = EpisodeLog(mission, policy_name)
    for turn in play_turns(episode, policy, render=True):
        record = log.add_turn(turn.decision.thought, turn.decision.calls, turn.runs, episode)
        if episode.done:
            log.finish(episode)
        assert turn.view is not None
        yield frame_after_turn(episode, turn.view, turn.context, record), log


def play_to_end(mission: Mission, policy: Policy, policy_name: str) -> tuple[list[Frame], EpisodeLog]:
    """Every frame of a whole episode and its finished log (what the viewers watch)."""
    frames: list[Frame] = []
    log = EpisodeLog(mission, policy_name)
    for frame, log in record_play(mission, policy, policy_name):  # noqa: B007 (the last log is the finished one)
        frames.append(frame)
    return frames, log


def replay(log: EpisodeLog) -> list[Frame]:
    """Rebuild the world and run the saved calls again; every result, notepad, position and find
    must be what the file says, else :class:`EpisodeFileError` names the line and the field."""
    episode = Episode.start(log.mission)
    frames = []
    name = log.source or "episode"
    for record in log.turns:
        where = f"{name} line {record.line} (turn {record.turn})" if record.line else f"{name} turn {record.turn}"
        if episode.done:
            raise EpisodeFileError(f"{where}: the mission was already over ({episode.outcome}) before this turn")
        context, view = episode.context_text(), render_view(episode)
        runs = episode.play_turn(record.player_calls())
        for index, (call, run) in enumerate(zip(record.calls, runs, strict=True)):
            if call["result"] != run.result or call["ok"] != run.ok:
                raise EpisodeFileError(f"{where}: calls[{index}] {call['name']} says {call['result']!r} but the world "
                                       f"answers {run.result!r} (the file does not match its mission)")
        checks = [("position", list(record.position), list(episode.position)),
                  ("notepad", record.notepad, episode.notepad), ("found", record.found, episode.found)]
        for key, saved, actual in checks:
            if saved != actual:
                raise EpisodeFileError(f"{where}: '{key}' is {saved!r} but replaying gives {actual!r}")
        frames.append(frame_after_turn(episode, view, context, record))
    end = log.end or {}
    where = f"{name} line {log.end_line}" if log.end_line else name
    if not episode.done:
        raise EpisodeFileError(f"{where}: the file ends after turn {episode.turn} but the mission is not over "
                               f"({episode.mission.max_turns} turns, no declare_done)")
    actual_end = {"outcome": episode.outcome, "success": episode.success, "turns": episode.turn}
    if end != actual_end:
        raise EpisodeFileError(f"{where}: 'end' is {end!r} but replaying gives {actual_end!r}")
    return frames
