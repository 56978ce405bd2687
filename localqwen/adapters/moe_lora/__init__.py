"""MoE-LoRA: several LoRA experts per linear layer, a router on the layer input picks top-k per token."""

from localqwen.adapters.moe_lora.config import MoELoRAConfig

__all__ = ["MoELoRAConfig"]
