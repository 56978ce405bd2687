"""Will it fit, and how long will it take? Estimated before a run starts.

Memory = weights (by quantization) + trainable copies (gradients, optimizer states) + activations
(by batch and sequence length, with or without gradient checkpointing) + logits. Parameter counts
come from the model's config instantiated on the ``meta`` device, so nothing is loaded.
Time comes from a few measured warm-up steps of the real job.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localqwen.adapters.config_base import DEFAULT_TARGETS
from localqwen.runtime.host import GIB
from localqwen.runtime.plan import BYTES_PER_PARAM
from localqwen.training.methods import loads_in_4bit

# Training keeps weights and activations in bf16 (or fp16, the same size) unless the job asks for fp32.
DTYPE_OF_PRECISION = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
CPU_ALLOCATOR_SLACK = 1.3


@dataclass
class ModelShape:
    total_params: int
    linear_params: int  # decoder projection weights (what 4-bit quantization shrinks)
    hidden_size: int
    intermediate_size: int
    num_layers: int
    kv_dim: int
    q_dim: int
    num_heads: int
    vocab_size: int
    lora_in_out: list[tuple[int, int]]  # (in, out) of each LoRA target


@dataclass
class MemoryEstimate:
    weights_gb: float
    trainable_params: int
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float
    logits_gb: float
    overhead_gb: float
    total_gb: float
    available_gb: float | None
    fits: bool | None
    warning: str = ""

    def as_rows(self) -> list[list[Any]]:
        """The estimate as a two-column table, each value with its unit (a parameter count is not GiB)."""
        def gib(value: float | None) -> str:
            return "unknown" if value is None else f"{value:.3f} GiB"

        fits = {True: "yes", False: "no", None: "unknown"}[self.fits]
        return [["weights", gib(self.weights_gb)], ["gradients", gib(self.gradients_gb)],
                ["optimizer states", gib(self.optimizer_gb)], ["activations", gib(self.activations_gb)],
                ["logits", gib(self.logits_gb)], ["overhead", gib(self.overhead_gb)], ["total", gib(self.total_gb)],
                ["available", gib(self.available_gb)], ["fits", fits],
                ["trainable parameters", f"{self.trainable_params:,}"]]


def model_shape(model_path_or_config: Any) -> ModelShape:
    """Parameter counts of the model, built on the meta device from its config (no weights read)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText, PretrainedConfig

    config = model_path_or_config
    if not isinstance(config, PretrainedConfig):
        config = AutoConfig.from_pretrained(str(model_path_or_config))
    vision = getattr(config, "vision_config", None) is not None
    with torch.device("meta"):
        model = (AutoModelForImageTextToText if vision else AutoModelForCausalLM).from_config(config)
    text = config.get_text_config()
    total = sum(p.numel() for p in model.parameters())
    linear = 0
    lora: list[tuple[int, int]] = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and "visual" not in name and "lm_head" not in name:
            linear += module.weight.numel()
            if name.rsplit(".", 1)[-1] in DEFAULT_TARGETS:
                lora.append((module.in_features, module.out_features))
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    kv_heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    return ModelShape(total, linear, text.hidden_size, text.intermediate_size, text.num_hidden_layers,
                      kv_heads * head_dim, text.num_attention_heads * head_dim, text.num_attention_heads,
                      text.vocab_size, lora)


def estimate_memory(
    shape: ModelShape,
    *,
    method: str = "lora",
    precision: str = "bf16",
    batch_size: int = 1,
    seq_len: int = 1024,
    gradient_checkpointing: bool = True,
    lora_rank: int = 8,
    available_gb: float | None = None,
    device: str = "cuda",
) -> MemoryEstimate:
    """Peak training memory in GiB, by part."""
    dtype_bytes = BYTES_PER_PARAM[DTYPE_OF_PRECISION.get(precision, "bfloat16")]
    quantized = loads_in_4bit(method)
    if quantized:
        other = shape.total_params - shape.linear_params
        weights = shape.linear_params * BYTES_PER_PARAM["nf4"] + other * dtype_bytes
    else:
        weights = shape.total_params * dtype_bytes
    if method == "full":
        trainable = shape.total_params
        train_bytes = dtype_bytes
    else:
        # LoRA-style adapters on the attention projections (IA3/DoRA are the same order or smaller).
        trainable = sum(lora_rank * (i + o) for i, o in shape.lora_in_out)
        train_bytes = 4.0  # adapters and their optimizer states stay in fp32
    gradients = trainable * train_bytes
    optimizer = trainable * train_bytes * 2  # AdamW: first and second moments
    if method != "full":
        weights += trainable * train_bytes
    tokens = batch_size * seq_len
    h, i, kv, q = shape.hidden_size, shape.intermediate_size, shape.kv_dim, shape.q_dim
    # Elements autograd keeps per token in one Qwen decoder layer: two RMSNorms (input and output),
    # q/k/v with their per-head norms and rotary copies, attention output, o_proj input, and the
    # SwiGLU MLP (gate, up, SiLU in/out, product). On CPU the attention kernel also keeps the
    # probabilities (heads x seq per token); CUDA's fused kernels do not.
    per_token = 4 * h + 7 * q + 8 * kv + 5 * i + (shape.num_heads * seq_len if device == "cpu" else 0)
    per_layer = tokens * per_token * dtype_bytes
    if gradient_checkpointing:
        activations = shape.num_layers * tokens * h * dtype_bytes + per_layer
    else:
        activations = shape.num_layers * per_layer
    logits = tokens * shape.vocab_size * 4 * 3  # fp32 logits, log-softmax and their gradient
    if device == "cpu":
        # Measured: the CPU allocator keeps freed activation blocks around, ~30% above what autograd
        # holds at once (tests/training/test_training_estimate.py checks against real peaks).
        activations *= CPU_ALLOCATOR_SLACK
        logits *= CPU_ALLOCATOR_SLACK
    overhead = (0.5 if device == "cuda" else 0.3) * GIB  # CUDA context / allocator slack, or the CPU runtime
    total = weights + gradients + optimizer + activations + logits + overhead
    total_gb = total / GIB
    fits = None
    warning = ""
    if available_gb is not None:
        fits = total_gb <= 0.9 * available_gb
        if not fits:
            warning = (f"needs about {total_gb:.1f} GiB but only {available_gb:.1f} GiB is free: lower the batch size or "
                       f"max_length, turn on gradient checkpointing, or use {'QLoRA' if method != 'qlora' else 'a smaller model'}")
    return MemoryEstimate(weights / GIB, trainable, gradients / GIB, optimizer / GIB, activations / GIB, logits / GIB,
                          overhead / GIB, total_gb, available_gb, fits, warning)


def available_memory_gb() -> tuple[float, str]:
    """Free memory of the device training will use: (GiB, "cuda" | "cpu")."""
    import torch

    if torch.cuda.is_available():
        free, _total = torch.cuda.mem_get_info()
        return free / GIB, "cuda"
    import psutil

    return psutil.virtual_memory().available / GIB, "cpu"


def estimate_for_job(config: Any) -> MemoryEstimate:
    """Memory estimate for a JobConfig, against this machine's free memory."""
    from localqwen.training.modeling import pick_dtype

    path = config.resolve(config.model.path)
    shape = model_shape(path if path is not None and path.exists() else config.model.path)
    free, device = available_memory_gb()
    import torch

    dtype = pick_dtype(config.training.precision)
    precision = "fp32" if dtype == torch.float32 else "bf16"
    rank = int(config.method.options.get("r", 8))
    batch = config.training.batch_size * (2 if config.training.objective == "dpo" else 1)  # chosen + rejected
    return estimate_memory(shape, method=config.method.name, precision=precision, batch_size=batch,
                           seq_len=config.training.max_length, gradient_checkpointing=config.training.gradient_checkpointing,
                           lora_rank=rank, available_gb=free, device=device)


@dataclass
class TimeEstimate:
    seconds_per_step: float
    total_steps: int
    total_seconds: float
    samples_per_second: float


def estimate_time(config: Any, warmup_steps: int = 3) -> TimeEstimate:
    """Run ``warmup_steps + 1`` real steps (in a scratch folder) and extrapolate to the whole job."""
    from localqwen.training.job_build import build_job
    from localqwen.training.job_progress import StopFlag

    measured = max(1, warmup_steps)
    with tempfile.TemporaryDirectory(prefix="lq-warmup-") as scratch:
        probe = config.model_copy(deep=True)
        probe.output_dir = str(Path(scratch) / "out")
        probe.training.save_steps = 10**9
        probe.tracking.swanlab = "off"
        if probe.data.source is not None:
            # Build the generated data once, where the real run will find it.
            probe.data.source = config.data.source
        step_times: list[float] = []
        parts = build_job(probe, lambda _e: None, StopFlag(), max_steps=measured + 1, tracking=False)

        from transformers import TrainerCallback

        class Timer(TrainerCallback):
            def __init__(self) -> None:
                self.last = time.monotonic()

            def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
                now = time.monotonic()
                step_times.append(now - self.last)
                self.last = now

        parts.trainer.add_callback(Timer())
        parts.trainer.train()
        rows = len(parts.data.train)
    per_step = sum(step_times[1:]) / max(1, len(step_times) - 1) if len(step_times) > 1 else step_times[0]
    t = config.training
    if t.max_steps > 0:
        total_steps = t.max_steps
    else:
        per_epoch = math.ceil(rows / (t.batch_size * t.gradient_accumulation))
        total_steps = math.ceil(per_epoch * t.epochs)
    samples = t.batch_size * t.gradient_accumulation / per_step
    return TimeEstimate(per_step, total_steps, per_step * total_steps, samples)


def published_7b_check() -> dict[str, float]:
    """Our estimate for a 7B (Qwen2-7B shape) next to LLaMA-Factory's published table (GiB)."""
    shape = qwen_7b_shape()
    ours = {
        method: estimate_memory(shape, method=method, precision="bf16", batch_size=1, seq_len=512,
                                gradient_checkpointing=True).total_gb
        for method in ("full", "lora", "qlora")
    }
    return ours


LLAMA_FACTORY_7B_GB = {"full": 60.0, "lora": 16.0, "qlora": 6.0}  # README "Hardware Requirement" table


def qwen_7b_shape() -> ModelShape:
    from transformers import Qwen2Config

    config = Qwen2Config(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                         num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False)
    return model_shape(config)
