"""Fine-tuning methods: full fine-tuning, or any registered adapter method (``localqwen.adapters``).

``TRAINING_METHODS`` is the one list a job config, the trainer's form and ``apply_method`` accept:
"full" followed by the adapter methods in the order they registered. ``MethodName`` validates
a name against it with the same message pydantic gives a ``Literal``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from localqwen.adapters import apply_adapter, get_method, load_adapter, method_names, save_adapter

FULL = "full"
TRAINING_METHODS: tuple[str, ...] = (FULL, *method_names())


def _known_method(name: str) -> str:
    if name not in TRAINING_METHODS:
        quoted = [f"'{method}'" for method in TRAINING_METHODS]
        close = difflib.get_close_matches(name, TRAINING_METHODS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise PydanticCustomError("literal_error", "Input should be {expected}{hint}",
                                  {"expected": ", ".join(quoted[:-1]) + " or " + quoted[-1], "hint": hint})
    return name


# A str checked against TRAINING_METHODS (a Literal can't be built from a list a type checker
# sees); the schema still lists the choices.
MethodName = Annotated[str, AfterValidator(_known_method),
                       WithJsonSchema({"type": "string", "enum": list(TRAINING_METHODS)})]


def loads_in_4bit(method: str) -> bool:
    """Whether ``method`` trains on a base model loaded in 4-bit NF4 (QLoRA)."""
    return method != FULL and get_method(method).needs_4bit


@dataclass
class MethodResult:
    model: Any
    method: str
    trainable_params: int
    total_params: int

    @property
    def trainable_fraction(self) -> float:
        return self.trainable_params / max(1, self.total_params)


def apply_method(model: Any, method: str, options: dict[str, Any] | None = None) -> MethodResult:
    """Make ``model`` trainable for ``method``; returns the (possibly wrapped) model and counts."""
    if method == FULL:
        from localqwen.adapters.targets import count_parameters

        # ``freeze_vision_tower``: a vision-language model's vision tower (and its mergers) keeps
        # its weights, as LLaMA-Factory's option of that name: for a tower that was trained
        # beforehand (a pretrained model, or the safari plugin's vision warm-up) and that the
        # replies' gradient would only blur.
        freeze_vision = bool((options or {}).get("freeze_vision_tower", False))
        for name, parameter in model.named_parameters():
            parameter.requires_grad_(not (freeze_vision and "visual" in name.split(".")))
        return MethodResult(model, method, *count_parameters(model))
    info = apply_adapter(model, method, dict(options or {}))
    return MethodResult(info.model, method, info.trainable_params, info.total_params)


def save_trained(model: Any, folder: Path, method: str) -> None:
    """Full models save as safetensors; adapters as their weights plus the method's description."""
    folder.mkdir(parents=True, exist_ok=True)
    if method == FULL:
        model.save_pretrained(folder, safe_serialization=True)
    else:
        save_adapter(model, folder)


def load_trained(base_model: Any, folder: Path) -> Any:
    """Put a trained adapter from ``folder`` onto ``base_model`` (the method is read from the folder)."""
    return load_adapter(base_model, folder)
