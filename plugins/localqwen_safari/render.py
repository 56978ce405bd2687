"""Pictures of the world: the agent's 10x10 view (16 px per cell, so one vision patch is one
cell) and the whole map with the path walked so far. PNG bytes, byte-identical for equal input."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from localqwen_safari.world import LAND, ROCK, WATER, Cell, World

if TYPE_CHECKING:
    from localqwen_safari.episode import Episode

CELL_PX = 16
MAP_CELL_PX = 8
COLOURS = {
    LAND: (200, 180, 110), WATER: (40, 90, 200), ROCK: (110, 110, 110), "outside": (0, 0, 0),
    "zebra": (250, 250, 250), "lion": (230, 120, 20), "elephant": (150, 80, 170), "giraffe": (240, 220, 30),
    "agent": (220, 20, 20), "path": (230, 60, 60), "unseen": (60, 60, 60),
}


def render_view(episode: Episode, *, blank: bool = False) -> bytes:
    """The agent's view as a 160x160 PNG; ``blank`` draws plain land (for "does it use its eyes?")."""
    from localqwen_safari.episode import VIEW

    top, left = episode.view_origin()
    cells = []
    for r in range(top, top + VIEW):
        for c in range(left, left + VIEW):
            cells.append(COLOURS[LAND] if blank else _cell_colour(episode.world, (r, c)))
    pixels = _blow_up(cells, VIEW, VIEW, CELL_PX)
    if not blank:
        _mark(pixels, VIEW, VIEW, CELL_PX, (top, left), episode.world)
    from localqwen_safari.episode import VIEW_BEFORE

    _fill(pixels, VIEW * CELL_PX, VIEW_BEFORE, VIEW_BEFORE, CELL_PX, 4, COLOURS["agent"])
    return _png(pixels, VIEW * CELL_PX, VIEW * CELL_PX)


def render_map(episode: Episode, *, fog: bool = False) -> bytes:
    """The whole map (8 px per cell) with the path so far; cells never seen are darkened, or with
    ``fog`` (a person playing) hidden altogether, animals on them included."""
    world = episode.world
    rows, cols = world.size
    cells = []
    for r in range(rows):
        for c in range(cols):
            colour = _cell_colour(world, (r, c))
            if (r, c) not in episode.seen:
                colour = COLOURS["unseen"] if fog else tuple(v // 2 for v in colour)
            cells.append(colour)
    pixels = _blow_up(cells, rows, cols, MAP_CELL_PX)
    _mark(pixels, rows, cols, MAP_CELL_PX, (0, 0), world, only=episode.seen if fog else None)
    for r, c in episode.path:
        _fill(pixels, cols * MAP_CELL_PX, r, c, MAP_CELL_PX, 3, COLOURS["path"])
    _fill(pixels, cols * MAP_CELL_PX, episode.position[0], episode.position[1], MAP_CELL_PX, 1, COLOURS["agent"])
    return _png(pixels, cols * MAP_CELL_PX, rows * MAP_CELL_PX)


def _cell_colour(world: World, cell: Cell) -> tuple[int, int, int]:
    if not world.inside(cell):
        return COLOURS["outside"]
    return COLOURS[world.ground(cell)]


def _blow_up(cells: list[tuple[int, int, int]], rows: int, cols: int, px: int) -> bytearray:
    """One RGB colour per cell -> a flat RGB pixel buffer with px x px pixels per cell."""
    out = bytearray()
    for r in range(rows):
        line = bytearray()
        for c in range(cols):
            line += bytes(cells[r * cols + c]) * px
        out += bytes(line) * px
    return out


def _fill(pixels: bytearray, width_px: int, row: int, col: int, px: int, inset: int,
          colour: tuple[int, ...]) -> None:
    """Paint the square of cell (row, col) inset by ``inset`` pixels on each side."""
    size = px - 2 * inset
    if size <= 0:
        return
    span = bytes(colour) * size
    for y in range(row * px + inset, row * px + inset + size):
        start = (y * width_px + col * px + inset) * 3
        pixels[start:start + len(span)] = span


def _mark(pixels: bytearray, rows: int, cols: int, px: int, origin: Cell, world: World,
          only: set[Cell] | None = None) -> None:
    """Animals as coloured squares with a dark border (so a white zebra stands out on land);
    with ``only``, just the animals on those cells."""
    top, left = origin
    for animal in world.animals:
        if only is not None and animal.cell not in only:
            continue
        r, c = animal.row - top, animal.col - left
        if 0 <= r < rows and 0 <= c < cols:
            _fill(pixels, cols * px, r, c, px, 1, (30, 30, 30))
            _fill(pixels, cols * px, r, c, px, max(2, px // 4), COLOURS[animal.species])


def _png(pixels: bytearray, width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.frombytes("RGB", (width, height), bytes(pixels)).save(buffer, format="PNG", optimize=False, compress_level=6)
    return buffer.getvalue()
