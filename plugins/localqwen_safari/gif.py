"""An episode as an animated GIF: one frame per turn, the player's view and the whole map (with
the path so far) side by side over a caption strip with the turn's Thought and tool calls."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localqwen_safari.replay import Frame

PAD = 8
CAPTION_LINES = 9
LINE_PX = 13
BACKGROUND = (24, 24, 24)
TEXT = (235, 235, 235)
DIM = (170, 170, 170)


def frame_image(frame: Frame, font: Any = None) -> Any:
    """One turn as a PIL image (view at its own 16 px per cell, map beside it, caption below)."""
    from PIL import Image, ImageDraw, ImageFont

    font = font or ImageFont.load_default()
    view = Image.open(io.BytesIO(frame.view)).convert("RGB")
    world_map = Image.open(io.BytesIO(frame.map)).convert("RGB")
    top = max(view.height, world_map.height)
    width = view.width + world_map.width + 3 * PAD
    height = PAD + LINE_PX + top + PAD + CAPTION_LINES * LINE_PX + PAD
    canvas = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    draw.text((PAD, PAD), _drawable(frame.status(), font), fill=DIM, font=font)
    canvas.paste(view, (PAD, PAD + LINE_PX))
    canvas.paste(world_map, (2 * PAD + view.width, PAD + LINE_PX))
    y = PAD + LINE_PX + top + PAD
    for line in caption_lines(frame, width - 2 * PAD, font):
        draw.text((PAD, y), _drawable(line, font), fill=TEXT, font=font)
        y += LINE_PX
    return canvas


def caption_lines(frame: Frame, width_px: int, font: Any) -> list[str]:
    """The Thought and the tool calls wrapped to the strip; the last line ends in ... when cut."""
    columns = max(20, int(width_px / max(1.0, font.getlength("abcdefghij") / 10)))
    lines = textwrap.wrap("Thought: " + (frame.thought or "(none)"), columns)
    for call in frame.call_lines():
        lines += textwrap.wrap(call, columns, initial_indent="> ", subsequent_indent="  ")
    if len(lines) > CAPTION_LINES:
        lines = lines[:CAPTION_LINES]
        lines[-1] = lines[-1][: columns - 3] + "..."
    return lines


def _drawable(text: str, font: Any) -> str:
    """Pillow's built-in bitmap font draws Latin-1 only; other characters become '?'."""
    from PIL import ImageFont

    if isinstance(font, ImageFont.ImageFont):
        return text.encode("latin-1", "replace").decode("latin-1")
    return text


def write_gif(frames: list[Frame], path: str | Path, *, frame_ms: int = 800) -> Path:
    """Save ``frames`` as a looping GIF (one image per turn; the last one held three times as long)."""
    from localqwen.atomic import atomic_write_bytes

    if not frames:
        raise ValueError("the episode has no turns to put in a GIF")
    if frame_ms < 20:
        raise ValueError(f"a GIF frame needs at least 20 ms, got {frame_ms}")
    images = [frame_image(frame) for frame in frames]
    buffer = io.BytesIO()
    durations = [frame_ms] * (len(images) - 1) + [frame_ms * 3]
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=durations, loop=0,
                   optimize=False, disposal=1)
    path = Path(path).expanduser()
    atomic_write_bytes(path, buffer.getvalue())
    return path
