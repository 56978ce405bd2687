"""Missions: what to find, in which world, in how many turns; read from JSONL or drawn from seeds.

A mission file has one JSON object per line, either a generated world::

    {"id": "m1", "kind": "find-one", "targets": ["zebra"], "seed": 123}

or a hand-made one::

    {"id": "m2", "kind": "find-two", "targets": ["lion", "zebra"],
     "map": ["....~~", ...], "start": [row, col], "max_turns": 25}

Every problem is reported with the line number it is on.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from localqwen_safari.world import SPECIES, World, generate_world, world_from_map

Kind = Literal["find-one", "find-two"]
KINDS: dict[str, int] = {"find-one": 1, "find-two": 2}  # kind -> number of targets
MAX_TURNS = 25
_KEYS = {"id", "kind", "targets", "seed", "map", "start", "max_turns"}


class MissionFileError(ValueError):
    """A mission file line that cannot be used; the message starts with the file and line."""


@dataclass(frozen=True)
class Mission:
    id: str
    kind: str
    targets: tuple[str, ...]
    seed: int | None = None  # a generated world ...
    map: tuple[str, ...] | None = None  # ... or a hand-made one
    start: tuple[int, int] | None = None
    max_turns: int = MAX_TURNS

    def world(self) -> World:
        if self.map is not None:
            assert self.start is not None
            return world_from_map(list(self.map), self.start)
        assert self.seed is not None
        return generate_world(self.seed)

    def describe(self) -> str:
        if len(self.targets) == 1:
            return f"Find the {self.targets[0]}."
        return "Find the " + ", then the ".join(self.targets) + " (in this order)."


def mission_for_seed(kind: str, seed: int) -> Mission:
    """The generated mission of ``kind`` for ``seed``: the world of that seed, targets drawn from it."""
    if kind not in KINDS:
        raise ValueError(f"unknown mission kind {kind!r} (expected one of {', '.join(KINDS)})")
    rng = random.Random(f"targets-{kind}-{seed}")
    return Mission(f"{kind}-{seed}", kind, tuple(rng.sample(SPECIES, KINDS[kind])), seed=seed)


def missions_in_turn(count: int, seed_start: int, kinds: tuple[str, ...] = tuple(KINDS)) -> list[Mission]:
    """``count`` generated missions with seeds from ``seed_start``, the ``kinds`` taken in turn
    (find-one, find-two, find-one, ...): how training, DAgger and probe episodes are drawn."""
    return [mission_for_seed(kinds[index % len(kinds)], seed_start + index) for index in range(count)]


def parse_seeds(text: str) -> list[int]:
    """``"1000-1299"``, ``"7"`` or ``"1,2,10-12"`` -> the seeds in order."""
    seeds: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        low, dash, high = part.partition("-")
        try:
            if dash:
                first, last = int(low), int(high)
                if last < first:
                    raise ValueError
                seeds.extend(range(first, last + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise ValueError(f"bad seed range {part!r} (use e.g. 7, 1000-1299 or 1,2,10-12)") from None
    if not seeds:
        raise ValueError("no seeds given")
    return seeds


def load_missions(path: str | Path) -> list[Mission]:
    """Every mission in a JSONL file (blank lines skipped); a bad line raises :class:`MissionFileError`."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise MissionFileError(f"mission file not found: {path}")
    missions: list[Mission] = []
    ids: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            mission = mission_from_record(json.loads(line))
        except json.JSONDecodeError as exc:
            raise MissionFileError(f"{path.name} line {number}: invalid JSON ({exc.msg})") from None
        except (ValueError, TypeError) as exc:
            raise MissionFileError(f"{path.name} line {number}: {exc}") from None
        if mission.id in ids:
            raise MissionFileError(f"{path.name} line {number}: id {mission.id!r} is already used on line {ids[mission.id]}")
        ids[mission.id] = number
        missions.append(mission)
    if not missions:
        raise MissionFileError(f"{path.name}: no missions in the file")
    return missions


def mission_from_record(record: Any) -> Mission:
    if not isinstance(record, dict):
        raise ValueError("each line must be a JSON object")
    unknown = sorted(set(record) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
    mission_id = record.get("id")
    if not isinstance(mission_id, str) or not mission_id:
        raise ValueError("'id' must be a non-empty string")
    kind = record.get("kind")
    if kind not in KINDS:
        raise ValueError(f"'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    targets = record.get("targets")
    if not isinstance(targets, list) or len(targets) != KINDS[kind]:
        raise ValueError(f"'targets' must list {KINDS[kind]} species for {kind}, got {targets!r}")
    for target in targets:
        if target not in SPECIES:
            raise ValueError(f"unknown species {target!r} in 'targets' (expected one of {', '.join(SPECIES)})")
    if len(set(targets)) != len(targets):
        raise ValueError(f"'targets' repeats a species: {targets}")
    max_turns = record.get("max_turns", MAX_TURNS)
    if not isinstance(max_turns, int) or isinstance(max_turns, bool) or not 1 <= max_turns <= 500:
        raise ValueError(f"'max_turns' must be an integer from 1 to 500, got {max_turns!r}")
    has_seed, has_map = "seed" in record, "map" in record
    if has_seed == has_map:
        raise ValueError("give either 'seed' (a generated world) or 'map' + 'start' (a hand-made world)")
    if has_seed:
        seed = record["seed"]
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"'seed' must be an integer, got {seed!r}")
        if "start" in record:
            raise ValueError("'start' belongs to hand-made worlds ('map'); a seed chooses its own start")
        return Mission(mission_id, kind, tuple(targets), seed=seed, max_turns=max_turns)
    rows, start = record["map"], record.get("start")
    if not isinstance(rows, list) or not rows or not all(isinstance(row, str) and row for row in rows):
        raise ValueError("'map' must be a list of non-empty strings")
    if (not isinstance(start, list) or len(start) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in start)):
        raise ValueError(f"'start' must be [row, col], got {start!r}")
    world = world_from_map(rows, (start[0], start[1]))  # raises on bad cells or a blocked start
    present = {animal.species for animal in world.animals}
    missing = [target for target in targets if target not in present]
    if missing:
        raise ValueError(f"the map has no {', '.join(missing)} (targets must be on the map)")
    return Mission(mission_id, kind, tuple(targets), map=tuple(rows), start=(start[0], start[1]), max_turns=max_turns)
