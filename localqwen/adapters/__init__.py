"""Adapters for fine-tuning: LoRA, QLoRA, DoRA, IA3 (PEFT) and our MoE-LoRA and MoT-LoRA.

Importing this package is light (no torch); see ``registry`` for the interface and ``methods``
for how a method registers itself.
"""

# Importing a method's module registers it; this order is the order the methods are listed in.
# isort: off
from localqwen.adapters import peft_methods  # noqa: F401 - lora, qlora, dora, ia3
from localqwen.adapters import moe_lora, mot_lora  # noqa: F401
# isort: on
from localqwen.adapters.errors import AdapterError, AdapterLoadError
from localqwen.adapters.methods import AdapterMethod, get_method, method_names, register_adapter_method
from localqwen.adapters.registry import (
    AdapterInfo,
    adapter_method,
    apply_adapter,
    load_adapter,
    method_options,
    save_adapter,
)

METHODS = method_names()  # the built-in methods, as registered above

__all__ = [
    "METHODS",
    "AdapterError",
    "AdapterInfo",
    "AdapterLoadError",
    "AdapterMethod",
    "adapter_method",
    "apply_adapter",
    "get_method",
    "load_adapter",
    "method_names",
    "method_options",
    "register_adapter_method",
    "save_adapter",
]
