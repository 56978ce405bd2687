"""Adapters for fine-tuning: LoRA, QLoRA, DoRA, IA3 (PEFT) and our MoE-LoRA and MoT-LoRA.

Importing this package is light (no torch); see ``registry`` for the interface.
"""

from localqwen.adapters.errors import AdapterError, AdapterLoadError
from localqwen.adapters.registry import (
    METHODS,
    AdapterInfo,
    adapter_method,
    apply_adapter,
    load_adapter,
    method_options,
    save_adapter,
)

__all__ = [
    "METHODS",
    "AdapterError",
    "AdapterInfo",
    "AdapterLoadError",
    "adapter_method",
    "apply_adapter",
    "load_adapter",
    "method_options",
    "save_adapter",
]
