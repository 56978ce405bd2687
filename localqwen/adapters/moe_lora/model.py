"""Injecting MoE-LoRA into a model (the PEFT "tuner model" role)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from localqwen.adapters.injection import inject_layers
from localqwen.adapters.moe_lora.config import MoELoRAConfig

if TYPE_CHECKING:
    from torch import nn


def inject_moe_lora(model: nn.Module, config: MoELoRAConfig) -> nn.Module:
    """Wrap the target linear layers of ``model`` in place with MoE-LoRA layers; returns ``model``."""
    from localqwen.adapters.moe_lora.layer import MoELoRALinear

    inject_layers(model, "moe-lora", config, MoELoRALinear, lambda base: MoELoRALinear(base, config))
    return model
