"""Saved episodes: one small JSONL file per played mission, enough to replay it exactly.

Line 1 is the header (the mission in the mission-file format, and who played); then one line per
turn (the Thought, each tool call with its result, and the notepad, position and finds after the
turn); the last line closes the episode with its outcome. Images are not stored: the world is
rebuilt from the mission and rendered again, so a file is a few kilobytes, and the same seed and
policy always give the same bytes (no timestamps, fixed key order)::

    {"format": "localqwen-safari-episode", "version": 1, "policy": "expert", "mission": {...}}
    {"turn": 1, "thought": "...", "calls": [{"name": "move", "arguments": {...}, "result": "...", "ok": true}],
     "notepad": "...", "position": [5, 7], "found": []}
    {"end": {"outcome": "success", "success": true, "turns": 9}}

Reading checks every field and names the line it is on (:class:`EpisodeFileError`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_write_text
from localqwen.runtime.tool_loop import ToolRun
from localqwen_safari.episode import Call, Episode
from localqwen_safari.missions import Mission, mission_from_record

FORMAT = "localqwen-safari-episode"
VERSION = 1
EPISODE_FILE = "episode.jsonl"


class EpisodeFileError(ValueError):
    """A saved episode that cannot be read or does not match its world; the message names the line."""


@dataclass
class TurnRecord:
    turn: int
    thought: str
    calls: list[dict[str, Any]]  # name, arguments (as the player sent them), result, ok
    notepad: str
    position: tuple[int, int]
    found: list[str]
    line: int = 0  # where it was read from (0 when recorded live), for error messages

    def player_calls(self) -> list[Call]:
        return [(call["name"], call["arguments"]) for call in self.calls]

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "thought": self.thought, "calls": self.calls, "notepad": self.notepad,
                "position": list(self.position), "found": list(self.found)}


@dataclass
class EpisodeLog:
    """What a played episode leaves behind; :meth:`add_turn` after each turn, :meth:`finish` at the end."""

    mission: Mission
    policy: str
    turns: list[TurnRecord] = field(default_factory=list)
    end: dict[str, Any] | None = None
    source: str = ""  # the file's name when read from one, for error messages
    end_line: int = 0

    def add_turn(self, thought: str, calls: list[Call], runs: list[ToolRun], episode: Episode) -> TurnRecord:
        record = TurnRecord(episode.turn, thought,
                            [{"name": name, "arguments": arguments, "result": run.result, "ok": run.ok}
                             for (name, arguments), run in zip(calls, runs, strict=True)],
                            episode.notepad, episode.position, list(episode.found))
        self.turns.append(record)
        return record

    def finish(self, episode: Episode) -> None:
        self.end = {"outcome": episode.outcome, "success": episode.success, "turns": episode.turn}

    def dumps(self) -> str:
        header = {"format": FORMAT, "version": VERSION, "policy": self.policy, "mission": mission_record(self.mission)}
        lines = [header] + [record.to_json() for record in self.turns]
        if self.end is not None:
            lines.append({"end": self.end})
        return "".join(json.dumps(line, ensure_ascii=False, separators=(", ", ": ")) + "\n" for line in lines)

    def save(self, path: str | Path) -> Path:
        path = Path(path).expanduser()
        atomic_write_text(path, self.dumps())
        return path


def mission_record(mission: Mission) -> dict[str, Any]:
    """The mission as a mission-file line (what :func:`mission_from_record` reads back)."""
    record: dict[str, Any] = {"id": mission.id, "kind": mission.kind, "targets": list(mission.targets)}
    if mission.map is not None:
        assert mission.start is not None
        record.update(map=list(mission.map), start=list(mission.start))
    else:
        record["seed"] = mission.seed
    record["max_turns"] = mission.max_turns
    return record


def load_episode(path: str | Path) -> EpisodeLog:
    """Read and check the shape of a saved episode (:func:`replay.replay` checks it against the world)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise EpisodeFileError(f"episode file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise EpisodeFileError(f"{path.name}: not a text file (an episode is UTF-8 JSON lines)") from None
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise EpisodeFileError(f"{path.name}: the file is empty")

    def fail(number: int, message: str) -> EpisodeFileError:
        return EpisodeFileError(f"{path.name} line {number}: {message}")

    objects = []
    for number, line in lines:
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            last = number == lines[-1][0]
            raise fail(number, f"invalid JSON ({exc.msg})" + (" - the file looks cut off" if last else "")) from None
        if not isinstance(value, dict):
            raise fail(number, "each line must be a JSON object")
        objects.append((number, value))
    number, header = objects[0]
    if header.get("format") != FORMAT:
        raise fail(number, f"not a safari episode (the first line needs \"format\": \"{FORMAT}\")")
    if header.get("version") != VERSION:
        raise fail(number, f"unsupported version {header.get('version')!r} (this LocalQwen reads version {VERSION})")
    policy = header.get("policy")
    if not isinstance(policy, str) or not policy:
        raise fail(number, "'policy' must be a non-empty string")
    try:
        mission = mission_from_record(header.get("mission"))
    except (ValueError, TypeError) as exc:
        raise fail(number, f"mission: {exc}") from None
    log = EpisodeLog(mission, policy, source=path.name)
    for number, value in objects[1:]:
        if log.end is not None:
            raise fail(number, "a line after the closing 'end' line")
        if "end" in value:
            log.end, log.end_line = _end(value, fail, number), number
        else:
            log.turns.append(_turn(value, len(log.turns) + 1, fail, number))
    if log.end is None:
        last_turn = log.turns[-1].turn if log.turns else 0
        raise EpisodeFileError(f"{path.name}: the file ends after turn {last_turn} without its closing 'end' line "
                               "(cut off?)")
    return log


def _turn(value: dict[str, Any], expected: int, fail: Any, number: int) -> TurnRecord:
    keys = {"turn", "thought", "calls", "notepad", "position", "found"}
    missing = sorted(keys - set(value))
    if missing:
        raise fail(number, f"a turn needs {', '.join(missing)}")
    unknown = sorted(set(value) - keys)
    if unknown:
        raise fail(number, f"unknown field(s) {', '.join(unknown)}")
    if value["turn"] != expected:
        raise fail(number, f"'turn' is {value['turn']!r}, expected {expected} (turns run 1, 2, 3, ...)")
    if not isinstance(value["thought"], str):
        raise fail(number, "'thought' must be a string")
    if not isinstance(value["notepad"], str):
        raise fail(number, "'notepad' must be a string")
    position = value["position"]
    if (not isinstance(position, list) or len(position) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in position)):
        raise fail(number, f"'position' must be [row, col], got {position!r}")
    found = value["found"]
    if not isinstance(found, list) or not all(isinstance(name, str) for name in found):
        raise fail(number, "'found' must be a list of species")
    calls = value["calls"]
    if not isinstance(calls, list):
        raise fail(number, "'calls' must be a list")
    for index, call in enumerate(calls):
        where = f"calls[{index}]"
        if not isinstance(call, dict) or set(call) != {"name", "arguments", "result", "ok"}:
            raise fail(number, f"{where} must be an object with name, arguments, result and ok")
        if not isinstance(call["name"], str) or not isinstance(call["result"], str) or not isinstance(call["ok"], bool):
            raise fail(number, f"{where}: 'name' and 'result' must be strings and 'ok' true or false")
    return TurnRecord(expected, value["thought"], calls, value["notepad"], (position[0], position[1]), found, number)


def _end(value: dict[str, Any], fail: Any, number: int) -> dict[str, Any]:
    end = value["end"]
    if set(value) != {"end"} or not isinstance(end, dict) or set(end) != {"outcome", "success", "turns"}:
        raise fail(number, "the closing line must be {\"end\": {\"outcome\": ..., \"success\": ..., \"turns\": ...}}")
    if not isinstance(end["outcome"], str) or not isinstance(end["success"], bool) or not isinstance(end["turns"], int):
        raise fail(number, "'end' needs a string outcome, a true/false success and a number of turns")
    return end
