"""Finding the linear layers an adapter wraps, and swapping modules in place."""

from __future__ import annotations

from typing import TYPE_CHECKING

from localqwen.adapters.errors import AdapterError

if TYPE_CHECKING:
    from torch import nn

LINEAR = "linear"
LINEAR_4BIT = "linear4bit"
# Qwen3-VL keeps its vision tower under `model.visual`; anything below a `visual` path part is vision.
VISION_PART = "visual"


def _is_bnb_class(module: object, name: str) -> bool:
    # Looked up through the class hierarchy by name so neither bitsandbytes nor CUDA is needed to
    # recognise (or reject) its layers; a subclass of Linear4bit counts as Linear4bit.
    return any(cls.__name__ == name and cls.__module__.startswith("bitsandbytes") for cls in type(module).__mro__)


def base_layer_kind(module: object) -> str | None:
    """"linear4bit" for bitsandbytes Linear4bit, "linear" for torch nn.Linear, None otherwise."""
    from torch import nn

    if _is_bnb_class(module, "Linear4bit"):
        return LINEAR_4BIT
    if _is_bnb_class(module, "Linear8bitLt"):
        raise AdapterError(
            "8-bit (LLM.int8) base layers are not supported; load the model in 4-bit (QLoRA) or full precision"
        )
    if isinstance(module, nn.Linear):
        return LINEAR
    return None


def is_vision_path(name: str) -> bool:
    return VISION_PART in name.split(".")


def name_matches(name: str, targets: list[str] | tuple[str, ...]) -> bool:
    return any(name == t or name.endswith("." + t) for t in targets)


def resolve_targets(
    model: nn.Module, target_modules: list[str] | tuple[str, ...], *, include_vision: bool = False
) -> list[tuple[str, nn.Module]]:
    """The (name, module) pairs to wrap, in model order; an error when nothing matches."""
    found: list[tuple[str, nn.Module]] = []
    unsupported: list[str] = []
    for name, module in model.named_modules():
        if not name or not name_matches(name, target_modules):
            continue
        if not include_vision and is_vision_path(name):
            continue
        if base_layer_kind(module) is None:
            unsupported.append(f"{name} ({type(module).__name__})")
            continue
        found.append((name, module))
    if not found:
        hint = f"; matched but not linear: {unsupported[:5]}" if unsupported else ""
        vision = "" if include_vision else " (vision tower skipped: set include_vision to target it)"
        raise AdapterError(f"no linear layer matches target_modules {list(target_modules)}{vision}{hint}")
    return found


def replace_module(model: nn.Module, name: str, new: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, new)


def mark_only_adapters_trainable(model: nn.Module, adapter_layer_types: tuple[type, ...]) -> None:
    """Freeze every parameter, then unfreeze the adapter parameters (never a wrapped base layer)."""
    for param in model.parameters():
        param.requires_grad_(False)
    for module in model.modules():
        if isinstance(module, adapter_layer_types):
            for name, param in module.named_parameters():
                if not name.startswith("base_layer."):
                    param.requires_grad_(True)


def adapter_device(base_layer: nn.Module):
    """Where adapter weights live: next to the base weights (a 4-bit weight is uint8, so no dtype)."""
    weight = getattr(base_layer, "weight", None)
    return weight.device if weight is not None else None


def count_parameters(model: nn.Module) -> tuple[int, int]:
    """(trainable, total) parameter counts; a 4-bit weight counts its logical in*out elements."""
    trainable = total = 0
    seen: set[int] = set()  # tied weights (embeddings and lm_head) count once
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            count = param.numel()
            if name == "weight" and base_layer_kind(module) == LINEAR_4BIT:
                count = module.in_features * module.out_features
            total += count
            if param.requires_grad:
                trainable += count
    return trainable, total
