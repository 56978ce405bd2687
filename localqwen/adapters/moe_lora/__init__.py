"""MoE-LoRA: several LoRA experts per linear layer, a router on the layer input picks top-k per token."""

from localqwen.adapters.methods import register_adapter_method
from localqwen.adapters.moe_lora.config import MoELoRAConfig
from localqwen.adapters.moe_lora.layer import expected_shapes, trainable_per_layer
from localqwen.adapters.moe_lora.model import inject_moe_lora

register_adapter_method(name="moe-lora", config_cls=MoELoRAConfig, inject=inject_moe_lora,
                        trainable_per_layer=trainable_per_layer, saved_shapes=expected_shapes)

__all__ = ["MoELoRAConfig"]
