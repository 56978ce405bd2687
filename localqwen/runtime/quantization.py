"""The one 4-bit NF4 setting, for loading a model to run (the engine) or to train (QLoRA).

NF4 with double quantization is what the QLoRA paper and PEFT use, and what the memory plan
counts (``plan.BYTES_PER_PARAM["nf4"]``); inference, training and the adapter tests share it so
a model quantized for one is quantized the same way for the others.
"""

from __future__ import annotations

from typing import Any


def nf4_config(compute_dtype: str = "bfloat16", *, storage_dtype: str | None = None) -> Any:
    """A ``transformers.BitsAndBytesConfig`` for 4-bit NF4 weights with double quantization.

    ``compute_dtype`` is the torch dtype name matmuls run in ("bfloat16", "float16", "float32").
    ``storage_dtype`` packs the 4-bit weights in that dtype instead of uint8 (the engine packs
    them in its compute dtype, so a sharded or offloaded model keeps one dtype throughout).
    """
    import importlib.util

    from transformers import BitsAndBytesConfig

    if importlib.util.find_spec("bitsandbytes") is None:
        raise RuntimeError("4-bit NF4 needs bitsandbytes: pip install 'localqwen[gpu]'")
    options: dict[str, Any] = {}
    if storage_dtype is not None:
        options["bnb_4bit_quant_storage"] = _dtype(storage_dtype)
    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=_dtype(compute_dtype),
        **options,
    )


def _dtype(name: str) -> Any:
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"{name!r} is not a torch dtype (use bfloat16, float16 or float32)")
    return dtype
