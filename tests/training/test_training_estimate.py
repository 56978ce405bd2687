"""The memory and time estimate: against real CPU peaks, published 7B figures, and warm-up steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localqwen.training.estimate import (
    LLAMA_FACTORY_7B_GB,
    estimate_memory,
    published_7b_check,
    qwen_7b_shape,
)

REPO = Path(__file__).resolve().parents[2]


def test_7b_estimates_match_llama_factory_published_table():
    ours = published_7b_check()
    for method, published in LLAMA_FACTORY_7B_GB.items():
        assert ours[method] == pytest.approx(published, rel=0.25), (method, ours[method], published)
    assert ours["qlora"] < ours["lora"] < ours["full"]


def test_activation_memory_follows_batch_length_and_checkpointing():
    shape = qwen_7b_shape()
    small = estimate_memory(shape, method="lora", batch_size=1, seq_len=512, gradient_checkpointing=False)
    big = estimate_memory(shape, method="lora", batch_size=4, seq_len=512, gradient_checkpointing=False)
    ckpt = estimate_memory(shape, method="lora", batch_size=4, seq_len=512, gradient_checkpointing=True)
    assert big.activations_gb == pytest.approx(4 * small.activations_gb)
    assert ckpt.activations_gb < big.activations_gb / 5
    assert big.weights_gb == small.weights_gb


def test_a_run_that_does_not_fit_gets_a_warning():
    estimate = estimate_memory(qwen_7b_shape(), method="full", available_gb=24.0)
    assert estimate.fits is False
    assert "only 24.0 GiB is free" in estimate.warning and "QLoRA" in estimate.warning
    assert estimate_memory(qwen_7b_shape(), method="qlora", available_gb=24.0).fits is True


@pytest.mark.slow
@pytest.mark.parametrize("method,batch,seq", [("full", 8, 256)])
def test_estimate_matches_measured_cpu_peak_memory(tmp_path_factory, method, batch, seq):
    from localqwen.testing.tiny_models import build_tiny_qwen3

    folder = tmp_path_factory.getbasetemp() / "mid_qwen3"
    if not (folder / "config.json").exists():
        build_tiny_qwen3(folder, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                         num_attention_heads=8, num_key_value_heads=4, head_dim=64)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "localqwen.training.memory_probe", str(folder), method, str(batch), str(seq)],
                         capture_output=True, text=True, env=env, timeout=300, check=True)
    numbers = json.loads(out.stdout.strip().splitlines()[-1])
    assert numbers["estimate_gb"] == pytest.approx(numbers["measured_gb"], rel=0.3), numbers


def test_time_estimate_from_warmup_steps(tmp_path, tiny_qwen3_path):
    from localqwen.training.config import parse_job_config
    from localqwen.training.estimate import estimate_time

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                                     {"role": "assistant", "content": f"a{i}"}]}) + "\n" for i in range(40)))
    config = parse_job_config({"output_dir": str(tmp_path / "out"), "model": {"path": str(tiny_qwen3_path)},
                               "data": {"train": str(data)}, "method": {"name": "lora"},
                               "training": {"epochs": 2, "batch_size": 4}, "tracking": {"swanlab": "off"}})
    timing = estimate_time(config, warmup_steps=2)
    assert timing.total_steps == 20  # 40 rows / batch 4, two epochs
    assert 0 < timing.seconds_per_step < 30
    assert timing.total_seconds == pytest.approx(timing.seconds_per_step * 20)
    assert not (tmp_path / "out").exists()  # warm-up ran in a scratch folder
