"""Vision warm-up: teach a from-scratch vision tower to read the cells of the view before SFT.

Why: trained only on the agent's replies, a tiny Qwen3-VL never learns to look (docs/safari_learning.md,
"Vision warm-up"): the decoder ignores image tokens that carry nothing useful yet, so the vision
tower gets almost no gradient, and the pair stays stuck at "no animals" (measured: 68% of views,
a reply that names the species in view, never right beyond that in 900 steps). Real VLMs start from
a pretrained vision encoder; ours has none, so it gets a short dense stage of its own: every one of
the image tokens predicts what is on its cells (land, water, rock, outside, or one of the four
species; one cell per token, or 2x2 where the model merges patches), labels read from the world
the view was rendered from. With this stage the same decoder-only training learns to name the
species in view (90% after 900 steps).

The per-token head is thrown away afterwards; the model folder written is an ordinary Qwen3-VL.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen_safari.episode import VIEW, Episode
from localqwen_safari.missions import missions_in_turn
from localqwen_safari.world import LAND, ROCK, SPECIES, WATER

if TYPE_CHECKING:
    from localqwen_safari.playing import Turn

CLASSES = ("outside", LAND, WATER, ROCK, *SPECIES)
ANIMAL_WEIGHT = 10.0  # animals cover ~1% of cells: without this the head learns the ground only


@dataclass
class WarmupResult:
    model: Path
    steps: int
    seconds: float
    views: int
    final_loss: float
    cell_accuracy: float  # held-out views, every cell
    animal_recall: float  # held-out views, the cells holding an animal


def cell_classes(episode: Episode) -> list[int]:
    """The class of each of the view's VIEW x VIEW cells, row by row, as render_view draws them."""
    world = episode.world
    top, left = episode.view_origin()
    animals = {animal.cell: animal.species for animal in world.animals}
    classes = []
    for r in range(top, top + VIEW):
        for c in range(left, left + VIEW):
            cell = (r, c)
            if not world.inside(cell):
                classes.append(CLASSES.index("outside"))
            elif cell in animals:
                classes.append(CLASSES.index(animals[cell]))
            else:
                classes.append(CLASSES.index(world.ground(cell)))
    return classes


def collect_views(episodes: int, seed_start: int, *, limit: int) -> list[tuple[bytes, list[int]]]:
    """The views the expert sees in ``episodes`` episodes (the training episodes when
    ``seed_start`` is the data source's), with their cell classes; at most ``limit``, spread evenly."""
    from localqwen_safari.policies import expert

    views = []
    for mission in missions_in_turn(episodes, seed_start):
        for turn, classes in turns_with_classes(Episode.start(mission), expert):
            assert turn.view is not None
            views.append((turn.view, classes))
    return spread(views, limit)


def turns_with_classes(episode: Episode, policy: Any) -> Iterator[tuple[Turn, list[int]]]:
    """Play ``episode`` with ``policy`` (views rendered), each turn with the cell classes of the view
    it was played from."""
    from localqwen_safari.playing import play_turns

    classes = cell_classes(episode)
    for turn in play_turns(episode, policy, render=True):
        yield turn, classes
        classes = cell_classes(episode)


def spread(views: list[tuple[bytes, list[int]]], limit: int) -> list[tuple[bytes, list[int]]]:
    """At most ``limit`` of ``views``, taken evenly across them."""
    if len(views) <= limit:
        return views
    step = len(views) / limit
    return [views[int(i * step)] for i in range(limit)]


def token_labels(classes: list[int], merge: int) -> list[list[int]]:
    """Per image token (row by row), the classes of its ``merge`` x ``merge`` cells in the merger's order."""
    tokens = []
    for tr in range(VIEW // merge):
        for tc in range(VIEW // merge):
            tokens.append([classes[(tr * merge + dr) * VIEW + tc * merge + dc] for dr in range(merge) for dc in range(merge)])
    return tokens


def save_model_folder(model, processor, source: Path, out: Path) -> Path:
    """Write a trained ``model`` and its ``processor`` to ``out`` as an ordinary model folder, with
    the generation config and chat template of the folder it was loaded from."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
    for extra in ("generation_config.json", "chat_template.jinja"):
        if (Path(source) / extra).exists() and not (out / extra).exists():
            shutil.copy2(Path(source) / extra, out / extra)
    return out


def warm_up_vision(model_dir: Path, out: Path, *, episodes: int, steps: int = 600, batch_size: int = 16,
                   learning_rate: float = 2e-3, seed_start: int | None = None, seed: int = 0,
                   max_views: int = 12_000, on_step: Callable[[int, int, float], None] | None = None,
                   views: list[tuple[bytes, list[int]]] | None = None) -> WarmupResult:
    """Train the vision tower and merger of ``model_dir`` on the dense cell labels of the views in
    ``episodes`` expert episodes; write the whole model (text weights untouched) to ``out``.
    ``views``: those episodes' views with their cell classes, gathered already while playing them
    for something else (tiny_training.tiny_rows), so they are not played twice."""
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from localqwen_safari.dataset import TRAIN_SEED_START

    started = time.monotonic()
    rng = random.Random(seed)
    torch.manual_seed(seed)
    if views is None:
        views = collect_views(episodes, TRAIN_SEED_START if seed_start is None else seed_start, limit=max_views)
    else:
        views = spread(views, max_views)
    rng.shuffle(views)
    held_out = views[: min(400, len(views) // 10)]
    train = views[len(held_out):]
    if not train:
        raise ValueError("no views to warm up on: give at least one episode")

    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32)
    visual = model.model.visual
    width = model.config.vision_config.out_hidden_size
    merge = model.config.vision_config.spatial_merge_size  # cells per image token, each way
    tokens_per_view = (VIEW // merge) ** 2
    head = torch.nn.Linear(width, merge * merge * len(CLASSES))
    place_head = torch.nn.Linear(width, tokens_per_view)
    weights = torch.ones(len(CLASSES))
    for species in SPECIES:
        weights[CLASSES.index(species)] = ANIMAL_WEIGHT
    trained = [*visual.parameters(), *head.parameters(), *place_head.parameters()]
    optimiser = torch.optim.AdamW(trained, lr=learning_rate, weight_decay=0.0)
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / warmup))

    def logits_and_targets(rows):
        import io

        images = [Image.open(io.BytesIO(view)).convert("RGB") for view, _ in rows]
        encoded = processor.image_processor(images=images, return_tensors="pt")
        tokens = visual(encoded["pixel_values"], grid_thw=encoded["image_grid_thw"]).pooler_output
        logits = head(tokens).reshape(-1, len(CLASSES))
        targets = torch.tensor([label for _, classes in rows for token in token_labels(classes, merge) for label in token])
        place_loss = torch.nn.functional.cross_entropy(place_head(tokens), torch.arange(tokens_per_view).repeat(len(rows)))
        return logits, targets, place_loss

    visual.train()
    loss_value = float("nan")
    for step in range(steps):
        logits, targets, place_loss = logits_and_targets(rng.sample(train, min(batch_size, len(train))))
        loss = torch.nn.functional.cross_entropy(logits, targets, weight=weights) + place_loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        loss_value = float(loss.item())
        if on_step is not None:
            on_step(step + 1, steps, loss_value)

    visual.eval()
    right = animals = animals_right = total = 0
    with torch.no_grad():
        for start in range(0, len(held_out), 50):
            logits, targets, _ = logits_and_targets(held_out[start:start + 50])
            predicted = logits.argmax(-1)
            right += int((predicted == targets).sum())
            total += len(targets)
            is_animal = targets >= CLASSES.index(SPECIES[0])
            animals += int(is_animal.sum())
            animals_right += int(((predicted == targets) & is_animal).sum())
    out = save_model_folder(model, processor, model_dir, out)
    return WarmupResult(model=out, steps=steps, seconds=round(time.monotonic() - started, 1), views=len(views),
                        final_loss=loss_value, cell_accuracy=right / max(1, total),
                        animal_recall=animals_right / max(1, animals))
