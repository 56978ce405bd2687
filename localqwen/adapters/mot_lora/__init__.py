"""MoT-LoRA: LoRA whose low-rank states are mixed along the sequence by a causal depthwise convolution."""

from localqwen.adapters.methods import register_adapter_method
from localqwen.adapters.mot_lora.config import MoTLoRAConfig
from localqwen.adapters.mot_lora.layer import expected_shapes, trainable_per_layer
from localqwen.adapters.mot_lora.model import inject_mot_lora

register_adapter_method(name="mot-lora", config_cls=MoTLoRAConfig, inject=inject_mot_lora,
                        trainable_per_layer=trainable_per_layer, saved_shapes=expected_shapes)

__all__ = ["MoTLoRAConfig"]
