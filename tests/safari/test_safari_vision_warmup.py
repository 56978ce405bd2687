"""Vision warm-up: its labels are what the view shows, in the order the real processor and merger
put the cells into image tokens, and a short warm-up of a real tiny Qwen3-VL teaches its vision
tower to read them while the text weights stay as they were."""

from __future__ import annotations

import io

import pytest
from localqwen_safari.episode import VIEW, Episode
from localqwen_safari.missions import mission_for_seed
from localqwen_safari.policies import expert
from localqwen_safari.render import CELL_PX, COLOURS, render_view
from localqwen_safari.vision_warmup import CLASSES, cell_classes, collect_views, token_labels


@pytest.fixture(scope="module")
def tiny_safari_model(tmp_path_factory):
    from localqwen_safari.learning import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("safari-vl") / "base", hidden=64, layers=2, vision_depth=1,
                            corpus_episodes=10)


@pytest.fixture(scope="module")
def tiny_safari_model_per_cell(tmp_path_factory):
    """The same with one image token per cell (no 2x2 merge)."""
    from localqwen_safari.learning import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("safari-vl-1") / "base", hidden=64, layers=2, vision_depth=1,
                            corpus_episodes=10, merge=1)


def cell_centre_colours(view: bytes) -> list[tuple[int, int, int]]:
    from PIL import Image

    image = Image.open(io.BytesIO(view)).convert("RGB")
    return [image.getpixel((c * CELL_PX + CELL_PX // 2, r * CELL_PX + CELL_PX // 2)) for r in range(VIEW) for c in range(VIEW)]


def test_cell_classes_are_what_the_view_shows():
    agent_cell = 4 * VIEW + 4  # the agent's marker covers its own cell's centre
    animals_seen = 0
    for seed in (1000, 1001, 1002):
        episode = Episode.start(mission_for_seed("find-two", seed))
        for _ in range(6):
            if episode.done:
                break
            classes, colours = cell_classes(episode), cell_centre_colours(render_view(episode))
            for index, (label, colour) in enumerate(zip(classes, colours, strict=True)):
                if index != agent_cell:
                    assert colour == COLOURS[CLASSES[label]], (seed, index, CLASSES[label], colour)
            animals_seen += sum(CLASSES[label] in ("zebra", "lion", "elephant", "giraffe") for label in classes)
            episode.play_turn(expert(episode).calls)
    assert animals_seen > 0  # the check covered animal cells, not only ground



def test_the_rows_pass_gathers_the_same_views_as_the_warmup_would():
    """The bench plays the expert's episodes once: tiny_rows hands the warm-up the very views (and
    labels) collect_views would have played again for."""
    from localqwen_safari.tiny_training import tiny_rows
    from localqwen_safari.vision_warmup import spread

    gathered: list[tuple[bytes, list[int]]] = []
    rows = tiny_rows(3, seed_start=1000, views=gathered)
    assert len(gathered) == len(rows) and [view for view, _ in gathered] == [row.view for row in rows]
    assert spread(gathered, 12) == collect_views(3, 1000, limit=12)
    assert spread(gathered, 10_000) == gathered


@pytest.mark.parametrize("model", ["tiny_safari_model", "tiny_safari_model_per_cell"])
def test_token_labels_follow_the_processors_patch_order(model, request):
    """Each image token is merge x merge consecutive patch rows of pixel_values (the merger
    concatenates them); those patches must be the token's cells in token_labels' order."""
    import numpy as np
    from PIL import Image
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(request.getfixturevalue(model))
    episode = Episode.start(mission_for_seed("find-one", 1003))
    view = render_view(episode)
    encoded = processor.image_processor(images=[Image.open(io.BytesIO(view)).convert("RGB")], return_tensors="pt")
    assert encoded["image_grid_thw"].tolist() == [[1, VIEW, VIEW]]  # never resized: a patch is a cell
    merge = processor.image_processor.merge_size
    patches = encoded["pixel_values"].numpy().reshape(VIEW * VIEW, 3, 2, CELL_PX, CELL_PX)
    centres = ((patches[:, :, 0, CELL_PX // 2, CELL_PX // 2] * 0.5 + 0.5) * 255).round().astype(int)
    colours = [tuple(np.array(COLOURS[CLASSES[label]])) for token in token_labels(cell_classes(episode), merge)
               for label in token]
    # the agent stands on view cell (4, 4): its token, then its place among that token's cells
    token = (4 // merge) * (VIEW // merge) + 4 // merge
    agent = {token * merge * merge + (4 % merge) * merge + 4 % merge}
    for row, (centre, colour) in enumerate(zip(centres, colours, strict=True)):
        if row not in agent:
            assert tuple(centre) == colour, row


def test_collect_views_keeps_each_view_with_its_own_labels():
    views = collect_views(2, 1000, limit=10)
    assert len(views) == 10
    for view, classes in views:
        colours = cell_centre_colours(view)
        assert all(colours[i] == COLOURS[CLASSES[label]] for i, label in enumerate(classes) if i != 4 * VIEW + 4)


@pytest.mark.parametrize("model", ["tiny_safari_model", "tiny_safari_model_per_cell"])
def test_a_short_warmup_teaches_the_tower_to_read_cells(model, request, tmp_path):
    import torch
    from localqwen_safari.vision_warmup import warm_up_vision
    from safetensors.torch import load_file

    tiny_safari_model = request.getfixturevalue(model)

    steps = []
    # 300 steps: at 200, animal recall across warm-up seeds ran from 0.49 to 0.79 (still learning)
    result = warm_up_vision(tiny_safari_model, tmp_path / "warm", episodes=30, steps=300, max_views=1500,
                            on_step=lambda step, total, loss: steps.append((step, total)))
    assert steps[-1] == (300, 300) and len(steps) == 300
    # land is about 70% of the cells: reading every cell right and most animal cells is learned, not guessed
    assert result.cell_accuracy >= 0.95, result
    assert result.animal_recall >= 0.6, result
    before, after = load_file(next(tiny_safari_model.glob("*.safetensors"))), load_file(next((tmp_path / "warm").glob("*.safetensors")))
    assert before.keys() == after.keys()
    changed = {name for name in before if not torch.equal(before[name], after[name])}
    assert changed and all(".visual." in f".{name}" for name in changed)  # the text weights are untouched
    assert any("merger" in name for name in changed)
    from transformers import AutoModelForImageTextToText, AutoProcessor

    AutoProcessor.from_pretrained(tmp_path / "warm")  # an ordinary model folder: processor beside the weights
    AutoModelForImageTextToText.from_pretrained(tmp_path / "warm")


def test_full_finetuning_can_freeze_the_vision_tower(tiny_safari_model):
    from transformers import AutoModelForImageTextToText

    from localqwen.training.methods import apply_method

    model = AutoModelForImageTextToText.from_pretrained(tiny_safari_model)
    frozen = apply_method(model, "full", {"freeze_vision_tower": True})
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable and not any("visual" in name.split(".") for name in trainable)
    assert any("language_model" in name for name in trainable)
    everything = apply_method(model, "full")
    assert everything.trainable_params == everything.total_params > frozen.trainable_params


def test_the_cli_warms_up_a_model_with_progress_and_names_a_bad_folder(tiny_safari_model, tmp_path):
    import json

    from typer.testing import CliRunner

    from localqwen.cli.main import app

    runner = CliRunner()
    result = runner.invoke(app, ["run", "safari", "warmup", "--model", str(tiny_safari_model), "--episodes", "3",
                                 "--steps", "30", "--output-dir", str(tmp_path / "warm"), "--json"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    progress = [e for e in events if e["kind"] == "progress"]
    assert [e["done"] for e in progress] == [10, 20, 30] and all(e["total"] == 30 for e in progress)
    done = events[-1]
    assert done["kind"] == "done" and done["status"] == "ok"
    assert done["result"]["steps"] == 30 and 0 <= done["result"]["cell_accuracy"] <= 1
    assert (tmp_path / "warm" / "config.json").is_file()
    missing = runner.invoke(app, ["run", "safari", "warmup", "--model", str(tmp_path / "nowhere"), "--json"])
    assert missing.exit_code != 0
    assert "not a model folder (no config.json)" in missing.output
