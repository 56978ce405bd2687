"""Fine-tuning methods: full fine-tuning here; adapters come from ``localqwen.adapters.registry``.

Where the adapters registry is not importable (a trimmed install), LoRA / QLoRA / DoRA / IA3 fall
back to PEFT directly with the same targets; MoE-LoRA and MoT-LoRA need the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]


@dataclass
class MethodResult:
    model: Any
    method: str
    trainable_params: int
    total_params: int

    @property
    def trainable_fraction(self) -> float:
        return self.trainable_params / max(1, self.total_params)


def _counts(model: Any) -> tuple[int, int]:
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return trainable, total


def _registry() -> Any | None:
    try:
        from localqwen.adapters import registry
    except ImportError:
        return None
    return registry if hasattr(registry, "apply_adapter") else None


def apply_method(model: Any, method: str, options: dict[str, Any] | None = None) -> MethodResult:
    """Make ``model`` trainable for ``method``; returns the (possibly wrapped) model and counts."""
    options = dict(options or {})
    if method == "full":
        for parameter in model.parameters():
            parameter.requires_grad_(True)
        trainable, total = _counts(model)
        return MethodResult(model, method, trainable, total)
    registry = _registry()
    if registry is not None:
        info = registry.apply_adapter(model, method, options)
        wrapped = getattr(info, "model", model)
        trainable, total = _counts(wrapped)
        return MethodResult(wrapped, method, trainable, total)
    if method in ("lora", "qlora", "dora", "ia3"):
        wrapped = _peft_fallback(model, method, options)
        trainable, total = _counts(wrapped)
        return MethodResult(wrapped, method, trainable, total)
    raise RuntimeError(f"method '{method}' needs localqwen.adapters.registry, which is not available")


def _language_targets(model: Any, names: list[str]) -> str:
    # Only the text decoder's projections (the vision tower also has q/k/v names in some models).
    joined = "|".join(names)
    return rf"^(?!.*visual).*\.({joined})$"


def _peft_fallback(model: Any, method: str, options: dict[str, Any]) -> Any:
    from peft import IA3Config, LoraConfig, get_peft_model, prepare_model_for_kbit_training

    if method == "qlora":
        model = prepare_model_for_kbit_training(model)
    targets = options.get("target_modules") or DEFAULT_TARGETS
    if method == "ia3":
        config = IA3Config(target_modules=_language_targets(model, targets),
                           feedforward_modules=[], task_type="CAUSAL_LM")
    else:
        config = LoraConfig(
            r=int(options.get("r", 8)),
            lora_alpha=int(options.get("alpha", options.get("lora_alpha", 16))),
            lora_dropout=float(options.get("dropout", options.get("lora_dropout", 0.0))),
            target_modules=_language_targets(model, targets),
            use_dora=method == "dora",
            task_type="CAUSAL_LM",
        )
    return get_peft_model(model, config)


def save_trained(model: Any, folder: Path, method: str) -> None:
    """Full models save as safetensors; adapters through the registry (or PEFT)."""
    folder.mkdir(parents=True, exist_ok=True)
    registry = _registry()
    if method != "full" and registry is not None and hasattr(registry, "save_adapter"):
        registry.save_adapter(model, folder)
        return
    model.save_pretrained(folder, safe_serialization=True)


def load_trained(base_model: Any, folder: Path) -> Any:
    registry = _registry()
    if registry is not None and hasattr(registry, "load_adapter"):
        return registry.load_adapter(base_model, folder)
    from peft import PeftModel

    return PeftModel.from_pretrained(base_model, str(folder))
