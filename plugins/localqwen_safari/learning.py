"""Training a safari agent from scratch: the tiny Qwen3-VL the learning proof uses, and one training
job through the trainer's runner with the ``safari`` data source (what ``localqwen train`` runs).

bench/bench_safari_learning.py runs the full proof; tests/safari runs a short one with the same code.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS_SEED_START = 50_000  # neither training (100,000+) nor evaluation (1000-1299) seeds


def tokenizer_corpus(episodes: int = 60) -> list[str]:
    """Safari text in the compact profile (contexts, Thoughts, tool calls as the chat template
    writes them), so the tiny model's BPE tokenizer spends its vocabulary on this task."""
    from localqwen_safari.episode import Episode
    from localqwen_safari.missions import KINDS, mission_for_seed
    from localqwen_safari.playing import play_turns
    from localqwen_safari.policies import expert
    from localqwen_safari.prompts import COMPACT_SYSTEM_PROMPT, compact_thought

    lines = [COMPACT_SYSTEM_PROMPT]
    kinds = list(KINDS)
    for index in range(episodes):
        episode = Episode.start(mission_for_seed(kinds[index % len(kinds)], CORPUS_SEED_START + index))
        for turn in play_turns(episode, expert):
            lines.append(turn.compact_context)
            lines.append("Thought: " + compact_thought(turn.decision.thought))
            lines += ['<tool_call>\n{"name": "' + name + '", "arguments": ' + json.dumps(arguments) + "}\n</tool_call>"
                      for name, arguments in turn.decision.calls]
    return lines


def build_tiny_model(out: Path, *, hidden: int = 96, layers: int = 3, vision_depth: int = 2,
                     corpus_episodes: int = 60, seed: int = 0) -> Path:
    """A random-weight Qwen3-VL from a config with a safari-trained tokenizer. ``image_size`` 160:
    the 160x160 view is never resized, so each 16 px patch is one cell (2x2 patches merge into one
    of the 25 image tokens)."""
    from localqwen.testing.tiny_models import build_tiny_qwen3_vl

    heads = max(1, hidden // 32)
    return build_tiny_qwen3_vl(
        out, hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers, head_dim=32,
        num_attention_heads=heads, num_key_value_heads=1, vocab_size=1024, corpus=tokenizer_corpus(corpus_episodes),
        image_size=160, seed=seed,
        vision_config={"depth": vision_depth, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2})


def count_parameters(path: Path) -> int:
    """Every weight in the folder's safetensors files, embeddings included."""
    from safetensors import safe_open

    total = 0
    for file in Path(path).glob("*.safetensors"):
        with safe_open(str(file), "pt") as weights:
            for name in weights.keys():  # noqa: SIM118 (safe_open is not iterable)
                size = 1
                for dim in weights.get_slice(name).get_shape():
                    size *= dim
                total += size
    return total


@dataclass
class TrainingRun:
    model: Path  # the trained model folder (full) or adapter folder (LoRA)
    seconds: float
    summary: str
    steps: int
    stopped_by_budget: bool


def train_on_expert(model: Path, out: Path, *, episodes: int, epochs: float, batch_size: int = 16,
                    learning_rate: float = 2e-3, max_steps: int = -1, minutes: float | None = None,
                    prompt: str = "compact", method: str = "full", method_options: dict[str, Any] | None = None,
                    max_length: int = 400, seed: int = 0) -> TrainingRun:
    """One job of the trainer's runner on ``episodes`` expert episodes from the ``safari`` data
    source. ``minutes`` is a wall-clock budget: when it runs out the job stops after the current
    step, keeps a checkpoint, and that checkpoint is the result (so the learning rate is constant
    after warmup: the budget may cut the run anywhere)."""
    from localqwen.plugin_api.extensions import Extensions
    from localqwen.training.config import parse_job_config
    from localqwen.training.job_progress import StopFlag
    from localqwen.training.runner import run_job
    from localqwen_safari.plugin import Safari

    extensions = Extensions.builtin().fork("safari")  # what the workbench hands `localqwen train`
    Safari().register(extensions)
    config = parse_job_config({
        "output_dir": str(out), "model": {"path": str(model), "task": "vision"},
        "data": {"source": {"name": "safari", "options": {"episodes": episodes, "prompt": prompt}}},
        "method": {"name": method, "options": method_options or {}}, "tracking": {"swanlab": "off"},
        "training": {"epochs": epochs, "max_steps": max_steps, "batch_size": batch_size,
                     "learning_rate": learning_rate, "lr_scheduler": "constant_with_warmup", "warmup_ratio": 0.03,
                     "max_length": max_length, "batching": "bucket", "logging_steps": 10, "save_steps": 10**6,
                     "seed": seed, "precision": "fp32" if method == "full" else "auto"},
    })
    stop = StopFlag()
    timer = None
    if minutes is not None:
        timer = threading.Timer(minutes * 60, stop.request, args=(f"the {minutes:g}-minute budget ran out",))
        timer.daemon = True
        timer.start()
    started = time.monotonic()
    try:
        done = run_job(config, data_sources=extensions.data_sources, stop=stop)
    finally:
        if timer is not None:
            timer.cancel()
    seconds = round(time.monotonic() - started, 1)
    result = done.result or {}
    if done.status == "cancelled" and stop.requested and result.get("checkpoint"):
        checkpoint = Path(result["checkpoint"])
        if method == "full":  # a full model's checkpoint loads as a model once its processor is beside it
            from transformers import AutoProcessor

            AutoProcessor.from_pretrained(model).save_pretrained(checkpoint)
        return TrainingRun(checkpoint, seconds, done.summary, int(result.get("step", 0)), True)
    if done.status != "ok":
        raise RuntimeError(f"the safari training job failed: {done.summary}")
    return TrainingRun(Path(result["final"]), seconds, done.summary, int(result.get("step", 0)), False)
