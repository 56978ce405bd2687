"""LoRA, QLoRA, DoRA and IA3 through PEFT, with the same target selection as our own methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from localqwen.adapters.config_base import LowRankConfig
from localqwen.adapters.errors import AdapterError
from localqwen.adapters.targets import LINEAR_4BIT, base_layer_kind, name_matches, resolve_targets

if TYPE_CHECKING:
    from torch import nn

PEFT_METHODS = ("lora", "qlora", "dora", "ia3")
# IA3 scales the *input* of these (feed-forward) layers and the output of all others, as PEFT does.
IA3_FEEDFORWARD = ("down_proj",)


def is_4bit(model: nn.Module) -> bool:
    return any(base_layer_kind(m) == LINEAR_4BIT for m in model.modules())


def keep_cpu_4bit_trainable(model: nn.Module) -> None:
    """Stop bitsandbytes (0.48-0.50) from repacking 4-bit weights for its CPU fast path.

    On CPUs with AVX512-BF16, Linear4bit repacks its weight on the first no-grad eval forward; a
    later training forward then runs a kernel without autograd (gradients are silently dropped) and
    saving unpacks it lossily, changing the base model's outputs. GPUs never take this path.
    """
    for module in model.modules():
        if base_layer_kind(module) == LINEAR_4BIT and hasattr(module, "support_avx512bf16_for_cpu"):
            module.support_avx512bf16_for_cpu = False


def apply_peft(model: nn.Module, method: str, settings: LowRankConfig, extra: dict[str, Any]):
    """Wrap ``model`` in a PeftModel for ``method``; returns the PeftModel."""
    from peft import IA3Config, LoraConfig, get_peft_model, prepare_model_for_kbit_training

    names = [name for name, _ in resolve_targets(model, settings.target_modules, include_vision=settings.include_vision)]
    quantized = is_4bit(model)
    keep_cpu_4bit_trainable(model)
    if method == "qlora" and not quantized:
        raise AdapterError(
            "qlora needs a base model loaded in 4-bit (from_pretrained(..., quantization_config="
            "localqwen.runtime.quantization.nf4_config())); use 'lora' for a full-precision model"
        )
    if quantized and not getattr(model, "is_loaded_in_4bit", False):
        # PEFT picks its bitsandbytes-aware layers from this flag, which only from_pretrained sets;
        # without it a hand-built 4-bit model would get plain LoRA layers around Linear4bit.
        model.is_loaded_in_4bit = True
    if quantized:
        # Casts norms to float32, freezes the base and enables input grads (+ checkpointing if asked).
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=bool(extra.get("gradient_checkpointing", False))
        )
    task_type = "CAUSAL_LM" if hasattr(model, "generate") and hasattr(model, "config") else None
    if method == "ia3":
        feedforward = [n for n in names if name_matches(n, IA3_FEEDFORWARD)]
        config = IA3Config(target_modules=names, feedforward_modules=feedforward, task_type=task_type)
    else:
        config = LoraConfig(
            r=settings.r,
            lora_alpha=settings.alpha,
            lora_dropout=settings.dropout,
            target_modules=names,
            bias="none",
            use_dora=method == "dora",
            task_type=task_type,
        )
    peft_model = get_peft_model(model, config)
    peft_model.localqwen_adapter_method = method
    return peft_model


def peft_method_of(model: Any) -> str | None:
    """"lora" / "qlora" / "dora" / "ia3" for a PeftModel, None for anything else."""
    configs = getattr(model, "peft_config", None)
    if not configs or not hasattr(model, "save_pretrained"):
        return None
    recorded = getattr(model, "localqwen_adapter_method", None)
    if recorded:
        return recorded
    return method_from_peft_config(next(iter(configs.values())), quantized=is_4bit(model))


def method_from_peft_config(config: Any, *, quantized: bool) -> str:
    peft_type = str(getattr(config, "peft_type", "")).split(".")[-1].upper()
    if peft_type == "IA3":
        return "ia3"
    if peft_type == "LORA":
        if getattr(config, "use_dora", False):
            return "dora"
        return "qlora" if quantized else "lora"
    raise AdapterError(f"PEFT adapter type {peft_type or '?'} is not one of LocalQwen's methods")
