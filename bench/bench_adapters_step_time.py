"""Training step time and peak memory of MoE-LoRA, MoT-LoRA and IA3 relative to LoRA.

Same tiny Qwen3-VL (built here by localqwen.testing.tiny_models), same batch, same optimizer, one
run; methods are timed in interleaved rounds and the median step is kept, so machine noise hits
all of them alike (on CPU the clock is the thread's CPU time, single-threaded torch). Goals: MoE-LoRA (E=4, k=2) / LoRA <= 1.3, MoT-LoRA / LoRA <= 1.15,
IA3 / LoRA <= 1.0.

Peak memory: on CUDA, torch.cuda.max_memory_allocated during a step; on CPU (no allocator
statistics) the bytes the step holds beyond the frozen model: tensors autograd saves for backward
(deduplicated by storage) plus adapter weights, their gradients and Adam's two moments.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

METHODS = {
    "lora": {"r": 8},
    "moe-lora": {"r": 8, "num_experts": 4, "top_k": 2},
    "mot-lora": {"r": 8, "kernel_size": 4},
    "ia3": {},
}
GOALS = {"moe-lora": 1.3, "mot-lora": 1.15, "ia3": 1.0}
BATCH, SEQ, ROUNDS, STEPS = 4, 128, 40, 1  # one step per method per round: load drift hits all alike


def build(path: Path, method: str, device):
    import torch
    from transformers import AutoModelForImageTextToText

    from localqwen.adapters import apply_adapter

    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32).to(device)
    model = apply_adapter(model, method, METHODS[method]).model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    return model, optimizer


def step(model, optimizer, batch) -> None:
    loss = model(**batch).loss
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def held_bytes(model, optimizer, batch) -> int:
    """Saved-for-backward bytes plus adapter weights, grads and Adam moments (CPU measure)."""
    import torch

    storages: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(**batch).loss
    loss.backward()
    optimizer.zero_grad(set_to_none=True)
    adapter = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    return sum(storages.values()) + 4 * adapter


def main() -> dict[str, float]:
    import torch

    from localqwen.testing.tiny_models import build_tiny_qwen3_vl

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_qwen3_vl(Path(tmp) / "tiny_vl")
        ids = torch.randint(0, 900, (BATCH, SEQ), generator=torch.Generator().manual_seed(0)).to(device)
        batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids}
        runs = {m: build(path, m, device) for m in METHODS}
        memory = {}
        for method, (model, optimizer) in runs.items():
            step(model, optimizer, batch)  # warm-up (allocations, Adam state)
            if device.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                step(model, optimizer, batch)
                memory[method] = torch.cuda.max_memory_allocated()
            else:
                memory[method] = held_bytes(model, optimizer, batch)
        # On CPU: this thread's CPU time, so other processes on a shared machine (preemption) do not
        # count; torch runs single-threaded here. On CUDA: wall time.
        clock = time.perf_counter if device.type == "cuda" else time.thread_time
        times: dict[str, list[float]] = {m: [] for m in METHODS}
        for _ in range(ROUNDS):
            for method, (model, optimizer) in runs.items():
                for _ in range(STEPS):
                    start = clock()
                    step(model, optimizer, batch)
                    if device.type == "cuda":
                        torch.cuda.synchronize()
                    times[method].append(clock() - start)
    median = {m: statistics.median(t) for m, t in times.items()}
    clock_name = "wall" if device.type == "cuda" else "thread CPU"
    print(f"device {device}, batch {BATCH} x {SEQ} tokens, median {clock_name} time of {ROUNDS * STEPS} steps per method")
    ratios = {}
    for method in METHODS:
        time_ratio = median[method] / median["lora"]
        memory_ratio = memory[method] / memory["lora"]
        goal = GOALS.get(method)
        verdict = "" if goal is None else (f"goal <= {goal}: " + ("met" if time_ratio <= goal else "MISSED"))
        print(f"{method:<9} step {median[method] * 1000:7.1f} ms  time/LoRA {time_ratio:5.2f}  "
              f"memory {memory[method] / 2**20:7.2f} MiB  memory/LoRA {memory_ratio:5.2f}  {verdict}")
        if method != "lora":
            ratios[f"{method}_time"] = time_ratio
            ratios[f"{method}_memory"] = memory_ratio
    return ratios


if __name__ == "__main__":
    main()
