"""Putting our adapter layers into a model in place, and finding them again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localqwen.adapters.config_base import LowRankConfig
from localqwen.adapters.errors import AdapterError
from localqwen.adapters.targets import mark_only_adapters_trainable, replace_module, resolve_targets

if TYPE_CHECKING:
    from torch import nn

STATE_ATTRIBUTE = "localqwen_adapter"


@dataclass
class InjectedAdapter:
    """What was put into a model: kept on the model as ``model.localqwen_adapter``."""

    method: str
    config: LowRankConfig
    modules: dict[str, tuple[int, int]]  # wrapped module name -> (in_features, out_features)
    hooks: list[Any]


def injected_adapter(model: nn.Module) -> InjectedAdapter | None:
    return getattr(model, STATE_ATTRIBUTE, None)


def inject_layers(
    model: nn.Module,
    method: str,
    config: LowRankConfig,
    layer_type: type,
    make_layer: Callable[[nn.Module], nn.Module],
) -> InjectedAdapter:
    """Wrap every target linear layer with ``make_layer(base)`` and freeze all but the adapters."""
    config.validate()
    if injected_adapter(model) is not None:
        raise AdapterError(f"this model already has a {injected_adapter(model).method} adapter")
    if any(getattr(m, "peft_config", None) for m in (model, getattr(model, "base_model", None))):
        raise AdapterError("this model already has a PEFT adapter; start from the base model")
    targets = resolve_targets(model, config.target_modules, include_vision=config.include_vision)
    modules = {}
    for name, base in targets:
        layer = make_layer(base)
        layer.train(base.training)  # a new module starts in training mode; follow the model's mode
        replace_module(model, name, layer)
        modules[name] = (base.in_features, base.out_features)
    mark_only_adapters_trainable(model, (layer_type,))
    if hasattr(model, "enable_input_require_grads"):
        # Frozen embeddings give checkpointed blocks inputs without grad; re-entrant checkpointing
        # would then drop the adapters' gradients (PEFT does the same).
        model.enable_input_require_grads()
    state = InjectedAdapter(method=method, config=config, modules=modules, hooks=[])
    setattr(model, STATE_ATTRIBUTE, state)
    return state


def remove_layers(model: nn.Module) -> nn.Module:
    """Undo injection: put the original base layers back and drop hooks (adapter weights are lost)."""
    state = injected_adapter(model)
    if state is None:
        return model
    for name in state.modules:
        replace_module(model, name, model.get_submodule(name).base_layer)
    for hook in state.hooks:
        hook.remove()
    delattr(model, STATE_ATTRIBUTE)
    return model
