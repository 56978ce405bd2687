"""Draws the app icon and the demo images in this folder (all made here, no third-party data).

    .venv/bin/python assets/make_assets.py

The PNGs are committed; run this again only to change them.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).resolve().parent


def icon(size: int = 256) -> Image.Image:
    """A rounded violet tile with a white speech bubble holding an eye: a local chat that sees."""
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    s = size / 256
    for y in range(size):  # vertical gradient, violet to indigo
        t = y / size
        draw.line([(0, y), (size, y)], fill=(int(124 - 60 * t), int(58 + 10 * t), int(237 - 40 * t), 255))
    mask = Image.new("L", (size, size), 0)
    ImageDraw.Draw(mask).rounded_rectangle([0, 0, size - 1, size - 1], radius=int(56 * s), fill=255)
    img.putalpha(mask)
    draw = ImageDraw.Draw(img)
    draw.rounded_rectangle([40 * s, 52 * s, 216 * s, 176 * s], radius=int(36 * s), fill="white")
    draw.polygon([(80 * s, 170 * s), (72 * s, 214 * s), (120 * s, 172 * s)], fill="white")
    draw.ellipse([84 * s, 82 * s, 172 * s, 146 * s], fill=(91, 33, 182))  # the eye
    draw.ellipse([110 * s, 96 * s, 146 * s, 132 * s], fill="white")
    draw.ellipse([120 * s, 106 * s, 136 * s, 122 * s], fill=(30, 27, 75))
    return img


def shapes(size: int = 320) -> Image.Image:
    """The scene the captioner demo describes: simple shapes with plain colour words."""
    img = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(img)
    draw.ellipse([30, 30, 130, 130], fill=(220, 30, 30))  # red circle
    draw.rectangle([180, 40, 280, 140], fill=(30, 80, 220))  # blue square
    draw.polygon([(60, 290), (160, 290), (110, 190)], fill=(30, 160, 60))  # green triangle
    draw.line([(190, 250), (300, 250)], fill="black", width=6)  # black line
    draw.regular_polygon((245, 200, 30), n_sides=5, fill=(240, 200, 20))  # yellow pentagon
    return img


def receipt(width: int = 360, height: int = 240) -> Image.Image:
    """A small typed document image for the OCR / document questions demo."""
    img = Image.new("RGB", (width, height), (250, 248, 240))
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=18)
    lines = ["LOCAL CAFE", "2 x tea          4.00", "1 x cake         3.50", "TOTAL            7.50"]
    for i, line in enumerate(lines):
        draw.text((24, 24 + i * 44), line, fill="black", font=font)
    return img


def main() -> None:
    icon().save(HERE / "localqwen.png")
    icon(48).save(HERE / "localqwen-48.png")
    icon().save(HERE / "localqwen.ico", sizes=[(16, 16), (32, 32), (48, 48), (256, 256)])
    (HERE / "demo").mkdir(exist_ok=True)
    shapes().save(HERE / "demo" / "shapes.png")
    receipt().save(HERE / "demo" / "receipt.png")


if __name__ == "__main__":
    main()
