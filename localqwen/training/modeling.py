"""Loading the base model and its processor/tokenizer for training and evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def is_vision_model(path: str | Path, task: str = "auto") -> bool:
    if task != "auto":
        return task == "vision"
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(path))
    return getattr(config, "vision_config", None) is not None


def pick_dtype(precision: str) -> Any:
    """fp32 on CPU; bf16 where CUDA supports it; fp16 only when asked."""
    import torch

    if precision == "fp32":
        return torch.float32
    if precision == "fp16":
        return torch.float16
    if precision == "bf16":
        return torch.bfloat16
    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def load_model_and_processor(
    path: str | Path, *, task: str = "auto", precision: str = "auto", quantize_4bit: bool = False,
    trust_remote_code: bool = False, trusted: list[str] | None = None,
) -> tuple[Any, Any, bool]:
    """(model, processor-or-tokenizer, is_vision).

    Every training-side load (the job, evaluation, merge, export) comes through here, so the same
    checks as the engine's run first: safetensors only, and ``trust_remote_code`` only for a model
    the user listed in ``runtime.trust_remote_code`` (``trusted`` overrides that list, for tests)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

    from localqwen.runtime.model_files import check_model_source

    check_model_source(path, trust_remote_code=trust_remote_code, trusted=trusted)
    vision = is_vision_model(path, task)
    # use_safetensors: a hub id is not checked on disk before transformers fetches it; this keeps
    # transformers from falling back to pickle weights there too.
    kwargs: dict[str, Any] = {"dtype": pick_dtype(precision), "trust_remote_code": trust_remote_code,
                              "use_safetensors": True}
    if quantize_4bit:
        from localqwen.runtime.quantization import nf4_config

        if not torch.cuda.is_available():
            raise RuntimeError("QLoRA needs a CUDA GPU (bitsandbytes 4-bit NF4); use 'lora' on this machine")
        # 4-bit matmuls in fp32 are slow and gain nothing: a full-precision job computes in bf16.
        compute = "bfloat16" if kwargs["dtype"] == torch.float32 else str(kwargs["dtype"]).removeprefix("torch.")
        kwargs["quantization_config"] = nf4_config(compute)
        kwargs["device_map"] = {"": 0}
    model_cls = AutoModelForImageTextToText if vision else AutoModelForCausalLM
    model = model_cls.from_pretrained(str(path), **kwargs)
    if vision:
        processor = AutoProcessor.from_pretrained(str(path), trust_remote_code=trust_remote_code)
    else:
        processor = AutoTokenizer.from_pretrained(str(path), trust_remote_code=trust_remote_code)
    return model, processor, vision  # a 4-bit model is prepared for training by the adapter method
