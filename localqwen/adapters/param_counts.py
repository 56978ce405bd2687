"""Trainable parameter counts from layer shapes alone (no weights needed), by each method's own
count (``AdapterMethod.trainable_per_layer``)."""

from __future__ import annotations

from typing import Any

from localqwen.adapters.methods import COMMON_OPTIONS, get_method

# (name, in_features, out_features) per wrapped linear layer
LayerShapes = list[tuple[str, int, int]]


def qwen3_text_layers(
    *, hidden: int, layers: int, heads: int, kv_heads: int, head_dim: int, intermediate: int, mlp: bool = False
) -> LayerShapes:
    """The target linear layers of a Qwen3 (or Qwen3-VL text) decoder with these config values."""
    per_layer = [
        ("q_proj", hidden, heads * head_dim),
        ("k_proj", hidden, kv_heads * head_dim),
        ("v_proj", hidden, kv_heads * head_dim),
        ("o_proj", heads * head_dim, hidden),
    ]
    if mlp:
        per_layer += [("gate_proj", hidden, intermediate), ("up_proj", hidden, intermediate),
                      ("down_proj", intermediate, hidden)]
    return per_layer * layers


def trainable_params(method: str, shapes: LayerShapes, options: dict[str, Any] | None = None) -> int:
    """What ``apply_adapter(model, method, options)`` reports as trainable for these layers."""
    spec = get_method(method)
    config = spec.config_cls.from_dict({k: v for k, v in (options or {}).items() if k not in COMMON_OPTIONS})
    return sum(spec.trainable_per_layer(name, fan_in, fan_out, config) for name, fan_in, fan_out in shapes)
