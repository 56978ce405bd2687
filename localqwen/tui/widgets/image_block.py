"""Draws an image in the terminal with half-block characters (two pixels per cell), plus a link."""

from __future__ import annotations

from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from localqwen.i18n import t

MAX_COLUMNS = 48


def half_block_strips(path: Path, columns: int = MAX_COLUMNS) -> list[Strip]:
    """Rows of ``▀`` cells whose foreground is the upper pixel and background the lower one."""
    from PIL import Image

    with Image.open(path) as image:
        image = image.convert("RGB")
        width = max(1, min(columns, image.width))
        height = max(2, round(image.height * width / image.width / 2) * 2)
        image = image.resize((width, height))
        pixels = image.load()
    strips = []
    for y in range(0, height, 2):
        segments = []
        for x in range(width):
            top = pixels[x, y]
            bottom = pixels[x, y + 1] if y + 1 < height else top
            segments.append(Segment("▀", Style(color=f"rgb{top}", bgcolor=f"rgb{bottom}")))
        strips.append(Strip(segments, width))
    return strips


class HalfBlockImage(Widget):
    DEFAULT_CSS = "HalfBlockImage { height: auto; width: auto; }"

    def __init__(self, path: Path) -> None:
        super().__init__()
        try:
            self._strips = half_block_strips(path)
        except Exception:  # an unreadable image shows its link only
            self._strips = []
        self.styles.height = len(self._strips)
        self.styles.width = self._strips[0].cell_length if self._strips else 0

    def render_line(self, y: int) -> Strip:
        return self._strips[y] if y < len(self._strips) else Strip.blank(self.size.width)


def file_link(path: str | Path, label: str | None = None) -> Text:
    """A clickable ``file://`` link (terminals and Textual open it)."""
    resolved = Path(path).resolve()
    text = Text()
    text.append(label or str(resolved), style=Style(link=resolved.as_uri(), underline=True, color="cyan"))
    return text


class ImageBlock(Vertical):
    """An image event: the picture, its caption and a link to the file."""

    DEFAULT_CSS = "ImageBlock { height: auto; margin: 1 0; }"

    def __init__(self, path: str, caption: str = "") -> None:
        super().__init__(classes="image-block")
        self.path = Path(path)
        self.caption = caption

    def compose(self) -> ComposeResult:
        yield HalfBlockImage(self.path)
        line = Text(f"🖼 {self.caption}  " if self.caption else "🖼 ")
        line.append_text(file_link(self.path, t("events.open_file", name=self.path.name)))
        yield Static(line, classes="image-caption")
