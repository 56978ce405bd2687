"""Training throughput: our job (TRL SFTTrainer + our Qwen collator + progress callbacks) against a
plain TRL SFTTrainer with its own vision collator, same tiny Qwen3-VL, same shapes data, same settings.

Prints samples/s for both and returns ours / plain (goal >= 1.0). Steps after the first are timed.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "2")

BATCH = 8
STEPS = 25


def _timer():
    from transformers import TrainerCallback

    class Timer(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[float] = []

        def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
            self.marks.append(time.perf_counter())

    return Timer()


def _samples_per_s(timer) -> float:
    spans = timer.marks[1:]
    return BATCH * (len(spans) - 1) / (spans[-1] - spans[0])


def ours(model_dir: Path, train: Path, out: Path) -> float:
    from localqwen.training.config import parse_job_config
    from localqwen.training.job_build import build_job
    from localqwen.training.job_progress import StopFlag

    config = parse_job_config({
        "output_dir": str(out), "model": {"path": str(model_dir)}, "data": {"train": str(train)},
        "method": {"name": "full"}, "tracking": {"swanlab": "off"},
        "training": {"max_steps": STEPS, "batch_size": BATCH, "learning_rate": 1e-3, "save_steps": 10**6,
                     "max_length": 128, "seed": 0},
    })
    parts = build_job(config, lambda _e: None, StopFlag(), tracking=False)
    timer = _timer()
    parts.trainer.add_callback(timer)
    parts.trainer.train()
    return _samples_per_s(timer)


def plain_trl(model_dir: Path, train: Path, out: Path) -> float:
    import datasets
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl import SFTConfig, SFTTrainer

    from localqwen.training.data import read_rows

    rows = read_rows(train)
    data = datasets.Dataset.from_dict({
        "messages": [[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": r["messages"][0]["content"][1]["text"]}]},
                      {"role": "assistant", "content": [{"type": "text", "text": r["messages"][1]["content"]}]}] for r in rows],
        "images": [[r["messages"][0]["content"][0]["image"]] for r in rows],
    }).cast_column("images", datasets.Sequence(datasets.Image()))
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32)
    args = SFTConfig(output_dir=str(out), max_steps=STEPS, per_device_train_batch_size=BATCH, learning_rate=1e-3,
                     save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True, seed=0,
                     gradient_checkpointing=False, max_length=None, logging_steps=1)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=AutoProcessor.from_pretrained(model_dir))
    timer = _timer()
    trainer.add_callback(timer)
    trainer.train()
    return _samples_per_s(timer)


def main() -> float:
    from localqwen.testing.tiny_models import build_tiny_qwen3_vl
    from localqwen.training.synthetic_shapes import build_shapes_dataset

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        model_dir = build_tiny_qwen3_vl(root / "model", hidden_size=128, intermediate_size=256, head_dim=32,
                                        num_attention_heads=4, num_key_value_heads=4)
        train = build_shapes_dataset(root / "data", n_train=BATCH * (STEPS + 2), n_eval=1)
        # Alternate runs so machine load affects both alike.
        plain = [plain_trl(model_dir, train, root / "plain0")]
        mine = [ours(model_dir, train, root / "ours0")]
        plain.append(plain_trl(model_dir, train, root / "plain1"))
        mine.append(ours(model_dir, train, root / "ours1"))
    best_ours, best_plain = max(mine), max(plain)
    ratio = best_ours / best_plain
    print(f"ours: {best_ours:.1f} samples/s  plain TRL SFTTrainer: {best_plain:.1f} samples/s  ratio {ratio:.2f}")
    return ratio


if __name__ == "__main__":
    main()
