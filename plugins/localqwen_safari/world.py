"""The safari world: a grid of land, water and rock with animals on it.

Deterministic: :func:`generate_world` draws everything from ``random.Random(seed)``, so one seed
always gives the same world. Hand-made worlds come from text maps (:func:`world_from_map`).
Animals stand still and block movement like water and rock do.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

LAND, WATER, ROCK = ".", "~", "#"
SPECIES = ("zebra", "lion", "elephant", "giraffe")
SPECIES_LETTER = {"zebra": "Z", "lion": "L", "elephant": "E", "giraffe": "G"}
LETTER_SPECIES = {letter: name for name, letter in SPECIES_LETTER.items()}
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}

Cell = tuple[int, int]  # (row, col)


def within_one(a: Cell, b: Cell) -> bool:
    """Whether ``a`` and ``b`` are at most one cell apart on each axis (diagonals count): near
    enough to declare a find (the rule ``declare_found`` checks; players and scores use it too)."""
    return abs(a[0] - b[0]) <= 1 and abs(a[1] - b[1]) <= 1


@dataclass(frozen=True)
class Animal:
    species: str
    row: int
    col: int

    @property
    def cell(self) -> Cell:
        return (self.row, self.col)


@dataclass
class World:
    terrain: list[str]  # rows of LAND / WATER / ROCK
    animals: list[Animal]
    start: Cell
    _animal_at: dict[Cell, Animal] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._animal_at = {animal.cell: animal for animal in self.animals}

    @property
    def size(self) -> tuple[int, int]:
        return len(self.terrain), len(self.terrain[0])

    def inside(self, cell: Cell) -> bool:
        rows, cols = self.size
        return 0 <= cell[0] < rows and 0 <= cell[1] < cols

    def ground(self, cell: Cell) -> str:
        return self.terrain[cell[0]][cell[1]]

    def animal_at(self, cell: Cell) -> Animal | None:
        return self._animal_at.get(cell)

    def blocker(self, cell: Cell) -> str | None:
        """Why ``cell`` cannot be entered ("the edge of the map", "water", "rock", "a zebra"), or None."""
        if not self.inside(cell):
            return "the edge of the map"
        ground = self.ground(cell)
        if ground == WATER:
            return "water"
        if ground == ROCK:
            return "rock"
        animal = self.animal_at(cell)
        if animal is not None:
            return f"a {animal.species}"
        return None

    def water_fraction(self) -> float:
        rows, cols = self.size
        return sum(row.count(WATER) for row in self.terrain) / (rows * cols)


def generate_world(seed: int, *, size: int = 32, water: float = 0.12, rock: float = 0.02,
                   animals: int = 6) -> World:
    """A random world: water in blobs (about ``water`` of the cells), scattered rock, and
    ``animals`` animals (every species at least once) on land the start can reach."""
    if size < 12:
        raise ValueError(f"a world needs at least 12x12 cells, got {size}")
    if animals < len(SPECIES):
        raise ValueError(f"a world needs at least {len(SPECIES)} animals (one per species), got {animals}")
    rng = random.Random(seed)
    grid = [[LAND] * size for _ in range(size)]
    target = round(water * size * size)
    wet = 0
    while wet < target:  # grow ponds by random walks from random centres
        row, col = rng.randrange(size), rng.randrange(size)
        for _ in range(rng.randint(8, 30)):
            if wet >= target:
                break
            if grid[row][col] == LAND:
                grid[row][col] = WATER
                wet += 1
            drow, dcol = rng.choice(list(MOVES.values()))
            row, col = min(size - 1, max(0, row + drow)), min(size - 1, max(0, col + dcol))
    for _ in range(round(rock * size * size)):
        row, col = rng.randrange(size), rng.randrange(size)
        if grid[row][col] == LAND:
            grid[row][col] = ROCK
    terrain = ["".join(row) for row in grid]
    land = [(r, c) for r in range(size) for c in range(size) if grid[r][c] == LAND]
    start = _start_in_largest_region(terrain, land, rng)
    reachable = sorted(_reachable(terrain, start))
    candidates = [cell for cell in reachable if abs(cell[0] - start[0]) + abs(cell[1] - start[1]) >= 4]
    cells = rng.sample(candidates, animals)
    kinds = list(SPECIES) + [rng.choice(SPECIES) for _ in range(animals - len(SPECIES))]
    rng.shuffle(kinds)
    return World(terrain, [Animal(kind, r, c) for kind, (r, c) in zip(kinds, cells, strict=True)], start)


def world_from_map(lines: list[str], start: Cell) -> World:
    """A hand-made world from text rows of ``. ~ #`` and the animal letters ``Z L E G``."""
    if not lines:
        raise ValueError("the map has no rows")
    width = len(lines[0])
    terrain: list[str] = []
    animals: list[Animal] = []
    for r, line in enumerate(lines):
        if len(line) != width:
            raise ValueError(f"map row {r} has {len(line)} cells, row 0 has {width} (rows must be equally long)")
        row = []
        for c, char in enumerate(line):
            if char in LETTER_SPECIES:
                animals.append(Animal(LETTER_SPECIES[char], r, c))
                row.append(LAND)
            elif char in (LAND, WATER, ROCK):
                row.append(char)
            else:
                raise ValueError(f"map row {r}, column {c}: unknown cell {char!r} "
                                 "(use . land, ~ water, # rock, Z L E G animals)")
        terrain.append("".join(row))
    world = World(terrain, animals, (int(start[0]), int(start[1])))
    if not world.inside(world.start):
        raise ValueError(f"the start {list(world.start)} is outside the {len(lines)}x{width} map")
    problem = world.blocker(world.start)
    if problem is not None:
        raise ValueError(f"the start {list(world.start)} is on {problem}")
    return world


def flood(start: Cell, is_open: Callable[[Cell], bool]) -> Iterator[Cell]:
    """The cells reached from ``start`` by single steps over cells ``is_open`` allows, breadth first
    (``start`` itself not among them, and spread from even where it is not open)."""
    seen = {start}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES.values():
            nxt = (r + dr, c + dc)
            if nxt not in seen and is_open(nxt):
                seen.add(nxt)
                queue.append(nxt)
                yield nxt


def _reachable(terrain: list[str], start: Cell) -> set[Cell]:
    rows, cols = len(terrain), len(terrain[0])
    return {start, *flood(start, lambda cell: 0 <= cell[0] < rows and 0 <= cell[1] < cols
                                              and terrain[cell[0]][cell[1]] == LAND)}


def _start_in_largest_region(terrain: list[str], land: list[Cell], rng: random.Random) -> Cell:
    """A start cell in the largest connected piece of land, so every animal can be reached."""
    unvisited = set(land)
    best: set[Cell] = set()
    for cell in land:
        if cell in unvisited:
            region = _reachable(terrain, cell)
            unvisited -= region
            if len(region) > len(best):
                best = region
    return rng.choice(sorted(best))
