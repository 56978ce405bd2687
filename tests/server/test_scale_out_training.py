"""Training beyond one device, run for real on this machine: ``localqwen train CONFIG`` under
``accelerate launch`` with 2 CPU processes (torch.distributed over gloo), from the same job config
as a single-process run. The multi-GPU path is the same command with ``--num_processes`` = GPUs.

Why the two runs should match: with 2 processes each optimizer step takes one batch per rank,
batches 2k and 2k+1 of the one shuffled order (accelerate shards the sampler's batches), and DDP
averages their gradients; a single process with ``gradient_accumulation = 2`` takes the same two
batches and averages the same way. So the per-step losses agree up to floating-point summation
order. A constant learning rate makes "3 steps, then --resume to 6" the same run as 6 straight.
The data come from a plugin's ``[data.source]`` (the test extender's ``tiny-qa``), which rank 0
builds while rank 1 waits (``localqwen.training.distributed``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

LOSS_TOLERANCE = 1e-4  # absolute, per step; measured here: identical to the last digit (difference 0.0)


def job(tmp_path: Path, model: Path, name: str, *, accumulation: int, steps: int) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""name = "{name}"
output_dir = "{tmp_path / name}"
[model]
path = "{model}"
[data.source]
name = "tiny-qa"
options = {{ n = 48 }}
[method]
name = "lora"
options = {{ r = 4, dropout = 0.0 }}
[training]
max_steps = {steps}
batch_size = 2
gradient_accumulation = {accumulation}
learning_rate = 0.01
lr_scheduler = "constant"
save_steps = 3
precision = "fp32"
[tracking]
swanlab = "off"
""", encoding="utf-8")
    return path


def losses(output: Path) -> dict[int, float]:
    found = {}
    for line in (output / "progress.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "metric" and "loss" in event["values"]:
            found[event["step"]] = event["values"]["loss"]
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LOCALQWEN_PLUGINS": "extender"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture
def extender_installed(tmp_path, monkeypatch):
    from install_plugins import write_distribution

    site = tmp_path / "site"
    write_distribution(site, "lq-extending-plugins", {"extender": "lq_extending_plugin:Extender"})
    support = Path(__file__).resolve().parents[1] / "support"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(support), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("LOCALQWEN_NO_THIRD_PARTY_PLUGINS", "0")


def accelerate_launch(config: Path, *extra: str) -> list[str]:
    # --multi_gpu picks accelerate's torch.distributed launcher; on a machine without CUDA each
    # process then runs on the CPU with the gloo backend (accelerate's MULTI_CPU state).
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
            "--main_process_port", str(free_port()),
            "-m", "localqwen.cli.main", "train", str(config), *extra]


def test_two_cpu_processes_train_like_one(tmp_path, tiny_qwen3_path, extender_installed):
    import torch
    from lq_extending_plugin import build_tiny_qa

    from localqwen.training.config import load_job_config
    from localqwen.training.data_sources import DataSource
    from localqwen.training.runner import run_job

    # The single-process reference runs in this process (the code `localqwen train` runs, without
    # another interpreter start: ~10 s); the two-process runs below go through the plugin's source.
    single = job(tmp_path, tiny_qwen3_path, "single", accumulation=2, steps=6)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each rank below: two threads step a tiny model slower, not faster
    try:
        done = run_job(load_job_config(single), data_sources={
            "tiny-qa": DataSource("tiny-qa", "Tiny number words", build_tiny_qa, "extender")})
    finally:
        torch.set_num_threads(threads)
    assert done.status == "ok", done.summary
    one = losses(tmp_path / "single")

    first_half = job(tmp_path, tiny_qwen3_path, "ddp", accumulation=1, steps=3)
    run(accelerate_launch(first_half))
    # Two processes really trained: the Trainer saves one RNG state per process in a distributed run.
    checkpoint = tmp_path / "ddp" / "checkpoint-3"
    assert sorted(p.name for p in checkpoint.glob("rng_state*.pth")) == ["rng_state_0.pth", "rng_state_1.pth"]
    # rank 0 alone speaks for the job: every step is logged once
    assert sorted(losses(tmp_path / "ddp")) == [1, 2, 3]

    whole = job(tmp_path, tiny_qwen3_path, "ddp", accumulation=1, steps=6)  # same output_dir, longer run
    run(accelerate_launch(whole, "--resume"))
    two = losses(tmp_path / "ddp")

    assert sorted(two) == sorted(one) == [1, 2, 3, 4, 5, 6]
    assert one[6] < one[1] and two[6] < two[1]  # it learns
    for step in one:
        assert two[step] == pytest.approx(one[step], abs=LOSS_TOLERANCE), (step, one, two)
    assert (tmp_path / "ddp" / "checkpoint-6").is_dir() and (tmp_path / "ddp" / "final").is_dir()
    # the data source was built once, by rank 0, into the job's folder
    assert (tmp_path / "ddp" / "data" / "train.jsonl").read_text().count("\n") == 48
    print("single", one, "\nddp", two)


RANKS_SCRIPT = """
import os
from localqwen.training.distributed import on_main_process

def say(*words):  # one write() per line: two ranks share the pipe, and print() may split a line
    os.write(1, (" ".join(str(word) for word in words) + "\\n").encode())

say(os.environ["RANK"], "got", on_main_process(lambda: "built by " + os.environ["RANK"]))
try:
    on_main_process(lambda: 1 / 0)
except Exception as exc:
    say(os.environ["RANK"], "failed", type(exc).__name__, exc)
"""


def test_only_rank_0_builds_and_a_failure_reaches_every_rank(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANKS_SCRIPT, encoding="utf-8")
    command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
               "--main_process_port", str(free_port()), str(script)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    lines = sorted(line for line in done.stdout.splitlines() if line[:1] in "01")
    assert lines == ["0 failed ZeroDivisionError division by zero", "0 got built by 0",
                     "1 failed RuntimeError the main process could not build the job's data: "
                     "ZeroDivisionError: division by zero", "1 got built by 0"]
