"""MoE-LoRA router statistics and balancing for the trainer.

Per step the trainer calls :func:`router_step` after ``optimizer.step()``: it applies the
auxiliary-loss-free bias update (when selected) and returns metrics to log. The Switch aux loss
needs no call: its gradient is added in backward by the layers themselves.
:func:`router_callback` wraps this as a transformers ``TrainerCallback`` for (TRL) trainers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn


def moe_layers(model: nn.Module) -> list[tuple[str, Any]]:
    from localqwen.adapters.moe_lora.layer import MoELoRALinear

    return [(name, m) for name, m in model.named_modules() if isinstance(m, MoELoRALinear)]


def collect_router_metrics(model: nn.Module) -> dict[str, float]:
    """Metrics of the last training forward over all MoE-LoRA layers ({} when there are none).

    aux_loss          summed Switch balancing loss (already multiplied by its coefficient)
    load_entropy      entropy of the expert load, / log(E): 1.0 = perfectly even, 0 = one expert
    router_entropy    mean per-token routing entropy, / log(E)
    max_load          largest share of routed assignments any expert got (1/E when even)
    dead_experts      experts that got no token, summed over layers
    """
    layers = [(name, m) for name, m in moe_layers(model) if m.last_stats is not None]
    if not layers:
        return {}
    load_entropy = router_entropy = aux = max_load = 0.0
    dead = 0
    for _, layer in layers:
        stats = layer.routing_stats()
        load = stats["load"].float()
        norm = math.log(layer.num_experts)
        load_entropy += float(-(load * load.clamp_min(1e-9).log()).sum()) / norm
        router_entropy += float(stats["router_entropy"]) / norm
        aux += float(stats["aux_loss"])
        max_load = max(max_load, float(load.max()))
        dead += int((load == 0).sum())
    count = len(layers)
    return {
        "moe/aux_loss": aux,
        "moe/load_entropy": load_entropy / count,
        "moe/router_entropy": router_entropy / count,
        "moe/max_load": max_load,
        "moe/dead_experts": float(dead),
    }


def expert_load(model: nn.Module) -> dict[str, list[float]]:
    """Per layer: the share of routed assignments each expert got in the last training forward."""
    return {name: m.routing_stats()["load"].tolist() for name, m in moe_layers(model) if m.last_stats is not None}


def router_step(model: nn.Module) -> dict[str, float]:
    """Call once per optimizer step: metrics of the step, then the bias update ("bias" balance)."""
    metrics = collect_router_metrics(model)
    for _, layer in moe_layers(model):
        layer.update_routing_bias()
    return metrics


def router_callback():
    """A transformers TrainerCallback that runs :func:`router_step` each step and logs its metrics."""
    from transformers import TrainerCallback

    class RouterBalanceCallback(TrainerCallback):
        def __init__(self) -> None:
            self.latest: dict[str, float] = {}

        def on_step_end(self, args, state, control, model=None, **kwargs):
            if model is not None:
                self.latest = router_step(model)
            return control

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs is not None and self.latest:
                logs.update(self.latest)
            return control

    return RouterBalanceCallback()
