"""LoRA, QLoRA, DoRA and IA3 through PEFT, with the same target selection as our own methods.

The four register themselves at the end of this file.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from localqwen.adapters.config_base import LowRankConfig, TargetConfig
from localqwen.adapters.errors import AdapterError
from localqwen.adapters.methods import register_adapter_method
from localqwen.adapters.targets import LINEAR_4BIT, base_layer_kind, name_matches, resolve_targets

if TYPE_CHECKING:
    from torch import nn

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


def inject_peft(model: nn.Module, config: TargetConfig, *, method: str):
    """Wrap ``model`` (prepared by ``apply_adapter``) in a PeftModel for ``method``; returns it."""
    from peft import IA3Config, LoraConfig, get_peft_model

    names = [name for name, _ in resolve_targets(model, config.target_modules, include_vision=config.include_vision)]
    task_type = "CAUSAL_LM" if hasattr(model, "generate") and hasattr(model, "config") else None
    if method == "ia3":
        feedforward = [n for n in names if name_matches(n, IA3_FEEDFORWARD)]
        peft_config = IA3Config(target_modules=names, feedforward_modules=feedforward, task_type=task_type)
    else:
        assert isinstance(config, LowRankConfig)
        peft_config = LoraConfig(
            r=config.r,
            lora_alpha=config.alpha,
            lora_dropout=config.dropout,
            target_modules=names,
            bias="none",
            use_dora=method == "dora",
            task_type=task_type,
        )
    peft_model = get_peft_model(model, peft_config)
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


def _low_rank_count(name: str, fan_in: int, fan_out: int, config: LowRankConfig) -> int:
    return config.r * (fan_in + fan_out)  # A (r x in) and B (out x r)


def _dora_count(name: str, fan_in: int, fan_out: int, config: LowRankConfig) -> int:
    return _low_rank_count(name, fan_in, fan_out, config) + fan_out  # + the magnitude vector


def _ia3_count(name: str, fan_in: int, fan_out: int, config: TargetConfig) -> int:
    return fan_in if name_matches(name, IA3_FEEDFORWARD) else fan_out  # one scaling vector


def _register(name: str, config_cls: type[TargetConfig], count: Any, *, needs_4bit: bool = False) -> None:
    register_adapter_method(name=name, config_cls=config_cls, inject=functools.partial(inject_peft, method=name),
                            trainable_per_layer=count, needs_4bit=needs_4bit)


_register("lora", LowRankConfig, _low_rank_count)
_register("qlora", LowRankConfig, _low_rank_count, needs_4bit=True)
_register("dora", LowRankConfig, _dora_count)
_register("ia3", TargetConfig, _ia3_count)  # IA3 learns scaling vectors, not low-rank matrices: only target options
