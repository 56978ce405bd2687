"""Synthetic image-caption data: one coloured shape on a plain background, drawn in code.

Used to prove training works end to end ("a red circle on a white background"), and registered
as the ``synthetic-shapes`` data source so any plugin (the captioner) can build it too.
Captions come in styles so an adapter can be taught a new one; DPO pairs put the true caption
against one with a wrong colour or shape.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_write_text

COLORS = {
    "red": (220, 30, 30),
    "green": (30, 170, 40),
    "blue": (30, 60, 220),
    "yellow": (235, 210, 20),
}
SHAPES = ("circle", "square", "triangle")
BACKGROUNDS = {"white": (255, 255, 255), "black": (0, 0, 0), "gray": (128, 128, 128)}
PROMPT = "Describe the image."
STYLES = {
    "plain": "a {color} {shape} on a {background} background",
    "tags": "shape={shape}; color={color}; background={background}",
    # Same words as "plain", shorter: a style change a LoRA learns without new tokens.
    "short": "a {color} {shape} on {background}",
}


@dataclass(frozen=True)
class ShapeScene:
    color: str
    shape: str
    background: str

    def caption(self, style: str = "plain") -> str:
        if style not in STYLES:
            raise ValueError(f"unknown caption style {style!r} (known: {', '.join(STYLES)})")
        return STYLES[style].format(color=self.color, shape=self.shape, background=self.background)


def draw(scene: ShapeScene, size: int, rng: random.Random) -> Any:
    """The scene as a PIL image, with a little jitter in size and position."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), BACKGROUNDS[scene.background])
    pen = ImageDraw.Draw(image)
    # Large shapes: the corners of the image then tell a square (filled) from a circle (empty)
    # from a triangle (bottom only), which a small vision tower picks up quickly.
    extent = rng.uniform(0.8, 0.95) * size
    cx = size / 2 + rng.uniform(-0.03, 0.03) * size
    cy = size / 2 + rng.uniform(-0.03, 0.03) * size
    half = extent / 2
    box = (cx - half, cy - half, cx + half, cy + half)
    fill = COLORS[scene.color]
    if scene.shape == "circle":
        pen.ellipse(box, fill=fill)
    elif scene.shape == "square":
        pen.rectangle(box, fill=fill)
    else:
        pen.polygon([(cx, cy - half), (cx - half, cy + half), (cx + half, cy + half)], fill=fill)
    return image


def random_scenes(n: int, rng: random.Random, colors: list[str] | None = None, shapes: list[str] | None = None,
                  backgrounds: list[str] | None = None) -> list[ShapeScene]:
    colors = colors or list(COLORS)
    shapes = shapes or list(SHAPES)
    backgrounds = backgrounds or list(BACKGROUNDS)
    return [ShapeScene(rng.choice(colors), rng.choice(shapes), rng.choice(backgrounds)) for _ in range(n)]


def _write_images(scenes: list[ShapeScene], folder: Path, prefix: str, size: int, rng: random.Random) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for index, scene in enumerate(scenes):
        name = f"{prefix}_{index:05d}.png"
        draw(scene, size, rng).save(folder / name)
        names.append(f"images/{name}")
    return names


def sft_row(image: str, caption: str, prompt: str = PROMPT) -> dict[str, Any]:
    return {"messages": [
        {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": prompt}]},
        {"role": "assistant", "content": caption},
    ]}


def build_shapes_dataset(
    out_dir: str | Path,
    *,
    n_train: int = 1000,
    n_eval: int = 100,
    image_size: int = 64,
    style: str = "plain",
    objective: str = "sft",
    seed: int = 0,
    colors: list[str] | None = None,
    shapes: list[str] | None = None,
    backgrounds: list[str] | None = None,
    rejected_style: str | None = None,
) -> Path:
    """Write images plus ``train.jsonl`` and ``eval.jsonl`` into ``out_dir``; returns train.jsonl.

    ``objective="dpo"`` writes preference pairs (true caption vs. one with a wrong colour or shape).
    """
    out = Path(out_dir)
    rng = random.Random(seed)
    files = {}
    for split, count in (("train", n_train), ("eval", n_eval)):
        scenes = random_scenes(count, rng, colors, shapes, backgrounds)
        images = _write_images(scenes, out / "images", f"{split}_{style}_{objective}", image_size, rng)
        if objective == "dpo":
            rows = [dpo_row(image, scene, style, rng, colors, shapes, rejected_style)
                    for image, scene in zip(images, scenes, strict=True)]
        else:
            rows = [sft_row(image, scene.caption(style)) for image, scene in zip(images, scenes, strict=True)]
        path = out / f"{split}.jsonl"
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        files[split] = path
    return files["train"]


def dpo_row(image: str, scene: ShapeScene, style: str, rng: random.Random,
            colors: list[str] | None = None, shapes: list[str] | None = None,
            rejected_style: str | None = None) -> dict[str, Any]:
    """Chosen: the true caption in ``style``. Rejected: a wrong colour or shape, or (half of the time,
    when ``rejected_style`` is given) the true caption in that other style."""
    colors = colors or list(COLORS)
    shapes = shapes or list(SHAPES)
    if rejected_style is not None and rng.random() < 0.5:
        wrong_caption = scene.caption(rejected_style)
        return {"prompt": [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": PROMPT}]}],
                "chosen": scene.caption(style), "rejected": wrong_caption}
    if rng.random() < 0.5 and len(colors) > 1:
        wrong = ShapeScene(rng.choice([c for c in colors if c != scene.color]), scene.shape, scene.background)
    else:
        wrong = ShapeScene(scene.color, rng.choice([s for s in shapes if s != scene.shape]), scene.background)
    return {
        "prompt": [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": PROMPT}]}],
        "chosen": scene.caption(style),
        "rejected": wrong.caption(style),
    }


def data_source_builder(out_dir: Path, **options: Any) -> Path:
    """The ``synthetic-shapes`` data source (see data_sources.py)."""
    return build_shapes_dataset(out_dir, **options)
