"""Trainable parameter counts from layer shapes alone (no weights needed), per method."""

from __future__ import annotations

from typing import Any

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
    options = options or {}
    r = options.get("r", 8)
    total = 0
    for name, fan_in, fan_out in shapes:
        if method in ("lora", "qlora"):
            total += r * (fan_in + fan_out)
        elif method == "dora":
            total += r * (fan_in + fan_out) + fan_out  # + magnitude vector
        elif method == "ia3":
            total += fan_in if name == "down_proj" else fan_out
        elif method == "moe-lora":
            experts = options.get("num_experts", 4)
            total += experts * r * (fan_in + fan_out) + experts * fan_in  # experts + router
        elif method == "mot-lora":
            total += r * (fan_in + fan_out) + r * options.get("kernel_size", 4)  # + depthwise mixer
        else:
            raise ValueError(f"unknown method {method!r}")
    return total
