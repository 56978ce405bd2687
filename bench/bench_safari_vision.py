"""Does the tiny safari Qwen3-VL learn to read its view, with and without the vision warm-up?

    .venv/bin/python bench/bench_safari_vision.py                 # both arms, ~10 min on one core
    .venv/bin/python bench/bench_safari_vision.py --steps 600     # shorter

The task isolates looking from playing: shown one view that holds an animal, the model replies
with the animal nearest to it and where it is ("lion 2 down 3 right"), nothing else. Two arms
from the same randomly initialised model (learning.build_tiny_model), trained the same way
(AdamW, the same rows and steps, a plain loop over the real processor and model):

- scratch: everything trains from the start, as the learning proof trained until 2026-11-24;
- warm-up: vision_warmup.warm_up_vision first (the renderer's cell labels), then the same
  training with the vision tower frozen (the learning proof's recipe now).

Prints, for each arm, exact replies and each field (species, rows, up/down, cols, left/right)
on held-out views (evaluation seeds), and the ratio warm-up / scratch. Always naming the commonest
reply scores about 2%.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

PROMPT = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Which animal is nearest?<|im_end|>\n" \
         "<|im_start|>assistant\n"
FIELDS = ("species", "rows", "up/down", "cols", "left/right")


def nearest_animal_views(count: int, seed_start: int, rng: random.Random) -> list[tuple[bytes, str]]:
    """Views with at least one animal, from random walks, each with its answer."""
    from localqwen_safari.episode import Episode
    from localqwen_safari.missions import KINDS, mission_for_seed
    from localqwen_safari.policies import random_policy, visible_animals
    from localqwen_safari.render import render_view

    kinds = list(KINDS)
    views: list[tuple[bytes, str]] = []
    seed = seed_start
    while len(views) < count:
        episode = Episode.start(mission_for_seed(kinds[seed % 2], seed))
        seed += 1
        while not episode.done and len(views) < count:
            seen = visible_animals(episode)
            if seen and rng.random() < 0.5:
                r0, c0 = episode.position
                species, (r, c) = min(seen, key=lambda item: (abs(item[1][0] - r0) + abs(item[1][1] - c0), item))
                views.append((render_view(episode), f"{species} {abs(r - r0)} {'down' if r > r0 else 'up'} "
                                                    f"{abs(c - c0)} {'right' if c > c0 else 'left'}"))
            episode.play_turn(random_policy(episode).calls)
    return views


def train_and_score(model_dir: Path, train: list, test: list, *, steps: int, batch_size: int, learning_rate: float,
                    freeze_vision: bool, seed: int) -> dict[str, Any]:
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from localqwen.training.methods import apply_method

    rng = random.Random(seed)
    torch.manual_seed(seed)
    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32)
    apply_method(model, "full", {"freeze_vision_tower": freeze_vision})
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trainable, lr=learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / 30))
    tokenizer = processor.tokenizer
    prompt_length = None
    started = time.monotonic()
    model.train()
    for step in range(steps):
        rows = rng.sample(train, batch_size)
        images = [Image.open(io.BytesIO(view)).convert("RGB") for view, _ in rows]
        tokenizer.padding_side = "right"
        batch = processor(text=[PROMPT + answer + "<|im_end|>" for _, answer in rows], images=images,
                          return_tensors="pt", padding=True)
        if prompt_length is None:
            prompt_length = len(processor(text=[PROMPT], images=images[:1], return_tensors="pt")["input_ids"][0])
        labels = batch["input_ids"].clone()
        labels[:, :prompt_length] = -100
        labels[batch["attention_mask"] == 0] = -100
        loss = model(**batch, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        if (step + 1) % 200 == 0:
            print(f"  step {step + 1}/{steps}, loss {loss.item():.4f}", flush=True)
    seconds = time.monotonic() - started
    model.eval()
    tokenizer.padding_side = "left"
    exact = 0
    fields = dict.fromkeys(FIELDS, 0)
    with torch.no_grad():
        for start in range(0, len(test), 50):
            chunk = test[start:start + 50]
            images = [Image.open(io.BytesIO(view)).convert("RGB") for view, _ in chunk]
            batch = processor(text=[PROMPT] * len(chunk), images=images, return_tensors="pt", padding=True)
            replies = model.generate(**batch, max_new_tokens=12, do_sample=False)[:, batch["input_ids"].shape[1]:]
            for (_, answer), reply in zip(chunk, replies, strict=True):
                said = tokenizer.decode(reply, skip_special_tokens=True).strip()
                exact += said == answer
                words, wanted = said.split(), answer.split()
                for index, name in enumerate(FIELDS):
                    fields[name] += len(words) == len(wanted) and words[index] == wanted[index]
    return {"exact": exact / len(test), **{name: value / len(test) for name, value in fields.items()},
            "train_seconds": round(seconds, 1)}


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1800, help="training steps of each arm")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--warmup-steps", type=int, default=600, help="vision warm-up steps (the bench's default)")
    parser.add_argument("--warmup-episodes", type=int, default=500)
    parser.add_argument("--train-views", type=int, default=6000)
    parser.add_argument("--test-views", type=int, default=400)
    parser.add_argument("--merge", type=int, default=2, choices=[1, 2],
                        help="image patches merged per token, each way (2: 25 tokens of 2x2 cells; 1: one per cell)")
    parser.add_argument("--skip-scratch", action="store_true", help="only the warm-up arm (the recipe)")
    parser.add_argument("--json", type=Path, default=Path("/tmp/safari_vision.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)

    from localqwen_safari.learning import build_tiny_model
    from localqwen_safari.vision_warmup import warm_up_vision

    rng = random.Random(0)
    train = nearest_animal_views(args.train_views, 100_000, rng)  # the training seeds' worlds
    test = nearest_animal_views(args.test_views, 1000, rng)  # the evaluation seeds' worlds
    counts: dict[str, int] = {}
    for _, answer in test:
        counts[answer] = counts.get(answer, 0) + 1
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()},
                              "commonest_reply_share": max(counts.values()) / len(test)}
    with tempfile.TemporaryDirectory(prefix="safari_vision_") as folder:
        base = build_tiny_model(Path(folder) / "base", merge=args.merge)
        if not args.skip_scratch:
            print(f"scratch: {args.steps} steps, everything trains", flush=True)
            report["scratch"] = train_and_score(base, train, test, steps=args.steps, batch_size=args.batch_size,
                                                learning_rate=args.learning_rate, freeze_vision=False, seed=0)
        warm = warm_up_vision(base, Path(folder) / "warm", episodes=args.warmup_episodes, steps=args.warmup_steps)
        print(f"warm-up: {warm.steps} steps in {warm.seconds:.0f} s, held-out cells {warm.cell_accuracy:.3f}, "
              f"animal cells {warm.animal_recall:.3f}; then {args.steps} steps, vision frozen", flush=True)
        report["warmup"] = {"seconds": warm.seconds, "cell_accuracy": warm.cell_accuracy,
                            "animal_recall": warm.animal_recall}
        report["warm-up"] = train_and_score(warm.model, train, test, steps=args.steps, batch_size=args.batch_size,
                                            learning_rate=args.learning_rate, freeze_vision=True, seed=0)
    for arm in ("scratch", "warm-up"):
        if arm in report:
            print(f"{arm:8s} " + "  ".join(f"{key} {report[arm][key]:.3f}" for key in ("exact", *FIELDS)))
    if "scratch" in report:
        scratch = report["scratch"]["exact"]
        report["ratio_exact"] = report["warm-up"]["exact"] / scratch if scratch else None
        print(f"exact replies, warm-up / scratch: {report['warm-up']['exact']:.3f} / {scratch:.3f}"
              + (f" = {report['ratio_exact']:.1f}x" if report["ratio_exact"] else " (scratch never right)")
              + f"; always the commonest reply: {report['commonest_reply_share']:.3f}")
    args.json.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
