"""How `localqwen train` starts: under `accelerate launch` across GPUs when there are several, else directly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from localqwen.atomic import atomic_write_text


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def write_accelerate_config(path: Path, num_gpus: int, mixed_precision: str = "bf16") -> Path:
    """A single-machine multi-GPU (DDP) accelerate config."""
    text = "\n".join([
        "compute_environment: LOCAL_MACHINE",
        "distributed_type: MULTI_GPU",
        "machine_rank: 0",
        "num_machines: 1",
        f"num_processes: {num_gpus}",
        f"mixed_precision: '{mixed_precision}'",  # quoted: YAML reads a bare `no` as false
        "gpu_ids: all",
        "main_training_function: main",
        "rdzv_backend: static",
        "same_network: true",
        "use_cpu: false",
        "",
    ])
    atomic_write_text(path, text)
    return path


def job_command(config_path: Path, *, resume: bool = False, json_events: bool = False,
                num_gpus: int | None = None, accelerate_config: Path | None = None) -> list[str]:
    """The argv of ``localqwen train CONFIG``: run directly, or under `accelerate launch` (one process
    per GPU, each running the same command; see :func:`under_distributed_launcher`)."""
    gpus = gpu_count() if num_gpus is None else num_gpus
    train = ["-m", "localqwen.cli.main", "train", str(config_path)]
    train += (["--resume"] if resume else []) + (["--json"] if json_events else [])
    if gpus > 1:
        cfg = accelerate_config or config_path.with_name("accelerate.yaml")
        write_accelerate_config(cfg, gpus)
        return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(cfg), *train]
    return [sys.executable, *train]


def under_distributed_launcher() -> bool:
    """True inside a process `accelerate launch` (or torchrun) started: it must train, not relaunch."""
    return "LOCAL_RANK" in os.environ
