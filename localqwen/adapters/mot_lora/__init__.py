"""MoT-LoRA: LoRA whose low-rank states are mixed along the sequence by a causal depthwise convolution."""

from localqwen.adapters.mot_lora.config import MoTLoRAConfig

__all__ = ["MoTLoRAConfig"]
