"""The adapter methods: each one registers itself once, where it is implemented.

    register_adapter_method(name="moe-lora", config_cls=MoELoRAConfig, inject=inject_moe_lora,
                            trainable_per_layer=trainable_per_layer, saved_shapes=expected_shapes)

``peft_methods.py`` registers LoRA, QLoRA, DoRA and IA3; ``moe_lora/`` and ``mot_lora/`` register
themselves in their ``__init__``. Importing ``localqwen.adapters`` imports all of them, so
:func:`method_names` is the one list the registry, the training config and the trainer's form
read. Nothing here imports torch or PEFT: listing the methods stays light.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localqwen.adapters.config_base import TargetConfig
from localqwen.adapters.errors import AdapterError

# Options every method takes besides its config's fields (``apply_adapter`` consumes them).
COMMON_OPTIONS = frozenset({"include_mlp", "gradient_checkpointing"})


@dataclass(frozen=True)
class AdapterMethod:
    """One method: its options (a config dataclass) and how it goes into a model.

    ``inject(model, config)`` adds a fresh adapter to a model already prepared for training (base
    frozen where needed, 4-bit prepared) and returns the model to use. ``trainable_per_layer(name,
    in, out, config)`` is what the adapter adds to one wrapped linear layer (``param_counts``
    counts a model from shapes alone with it). ``saved_shapes(in, out, config)`` names the tensors
    our own methods save per wrapped layer; PEFT methods have none (PEFT saves and loads them).
    """

    name: str
    config_cls: type[TargetConfig]
    inject: Callable[[Any, Any], Any]
    trainable_per_layer: Callable[[str, int, int, Any], int]
    saved_shapes: Callable[[int, int, Any], dict[str, tuple[int, ...]]] | None = None
    needs_4bit: bool = False  # the base model must be loaded in 4-bit (QLoRA)

    @property
    def own(self) -> bool:
        """Implemented here (layers injected in place) rather than through PEFT."""
        return self.saved_shapes is not None

    @property
    def options(self) -> list[str]:
        """Option names ``apply_adapter`` accepts for this method."""
        return sorted({f.name for f in dataclasses.fields(self.config_cls)} | COMMON_OPTIONS)


_METHODS: dict[str, AdapterMethod] = {}


def register_adapter_method(
    *,
    name: str,
    config_cls: type[TargetConfig],
    inject: Callable[[Any, Any], Any],
    trainable_per_layer: Callable[[str, int, int, Any], int],
    saved_shapes: Callable[[int, int, Any], dict[str, tuple[int, ...]]] | None = None,
    needs_4bit: bool = False,
) -> AdapterMethod:
    """Add a method under ``name`` (a second registration of one name is a mistake)."""
    if name in _METHODS:
        raise AdapterError(f"adapter method {name!r} is registered twice")
    if not (isinstance(config_cls, type) and issubclass(config_cls, TargetConfig)):
        raise AdapterError(f"{name}: config_cls must be a TargetConfig dataclass, got {config_cls!r}")
    method = AdapterMethod(name, config_cls, inject, trainable_per_layer, saved_shapes, needs_4bit)
    _METHODS[name] = method
    return method


def method_names() -> tuple[str, ...]:
    """Every registered method, in registration order."""
    return tuple(_METHODS)


def get_method(name: str, error: type[Exception] = AdapterError) -> AdapterMethod:
    """The registered method ``name``; an unknown name raises ``error`` listing the known ones."""
    try:
        return _METHODS[name]
    except KeyError:
        raise error(f"unknown adapter method {name!r}; choose one of {list(_METHODS)}") from None
