"""The hyperparameter presets, with learning rates chosen by method and model size.

One learning rate cannot suit both a real Qwen3 (billions of weights, already trained: small steps
keep what it knows) and a tiny random-weight model from ``localqwen dev tiny-model`` (a few hundred
thousand weights that must learn everything). At 2e-4 the quick preset left the tiny Qwen3-VL at
exact match 0 on the synthetic shapes; the rates below for tiny models were measured on that pair
(bench/bench_wizard_preset.py), those for real models are the usual published ones.
"""

from __future__ import annotations

from typing import Any

# Below this many parameters a model is a demo/test model (the tiny Qwen3 / Qwen3-VL builders).
TINY_MODEL_PARAMS = 50_000_000

PRESETS: dict[str, dict[str, Any]] = {
    # A quick look, a sensible default, and a longer run. Cosine decay after a short warm-up.
    "quick": {"epochs": 1.0, "batch_size": 4, "gradient_accumulation": 1, "max_length": 1024},
    "balanced": {"epochs": 3.0, "batch_size": 2, "gradient_accumulation": 4, "max_length": 2048},
    "thorough": {"epochs": 5.0, "batch_size": 1, "gradient_accumulation": 8, "max_length": 4096},
}
SCHEDULE = {"lr_scheduler": "cosine", "warmup_ratio": 0.05}

# preset -> (full fine-tuning, adapter) learning rates.
REAL_MODEL_RATES = {"quick": (2e-5, 2e-4), "balanced": (1e-5, 1e-4), "thorough": (5e-6, 5e-5)}
TINY_MODEL_RATES = {"quick": (2e-3, 5e-3), "balanced": (2e-3, 5e-3), "thorough": (1e-3, 2e-3)}

PRESET_HELP = {
    "quick": "1 epoch, batch 4: a first look in minutes",
    "balanced": "3 epochs, effective batch 8",
    "thorough": "5 epochs, effective batch 8, longer rows, smaller steps",
}


def preset_training(preset: str, *, method: str, params: int | None) -> dict[str, Any]:
    """The training settings of ``preset`` for ``method`` on a model with ``params`` weights
    (None: unknown, treated as a real model)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset '{preset}' (presets: {', '.join(PRESETS)})")
    tiny = params is not None and params < TINY_MODEL_PARAMS
    full_rate, adapter_rate = (TINY_MODEL_RATES if tiny else REAL_MODEL_RATES)[preset]
    return {**PRESETS[preset], **SCHEDULE, "learning_rate": full_rate if method == "full" else adapter_rate}


def suggested_methods(params: int | None) -> tuple[str, ...]:
    """The order in which the model step suggests methods: a tiny model learns only when all its
    weights train; a real one keeps what it knows with an adapter."""
    if params is not None and params < TINY_MODEL_PARAMS:
        return ("full", "lora", "qlora")
    return ("lora", "qlora", "full")
