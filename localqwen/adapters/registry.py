"""The adapter methods (each registered in ``methods.py``) behind one small interface, which
the trainer and the engine use.

    info = apply_adapter(model, "moe-lora", {"r": 8, "num_experts": 4, "top_k": 2})
    info.model, info.trainable_params, info.total_params
    save_adapter(info.model, folder)
    model = load_adapter(base_model, folder)      # the method is read from the folder

Common options: r, alpha, dropout, target_modules (default q/k/v/o_proj), include_mlp (adds
gate/up/down_proj), include_vision (lets targets reach Qwen3-VL's vision tower). Method options:
moe-lora num_experts, top_k, balance, aux_loss_coef, bias_update_rate, router_init_std;
mot-lora kernel_size; qlora (and any method on a 4-bit model) gradient_checkpointing.
IA3 has no rank: it takes only the target options.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.adapters import io
from localqwen.adapters.config_base import DEFAULT_TARGETS, MLP_TARGETS
from localqwen.adapters.errors import AdapterError, AdapterLoadError
from localqwen.adapters.injection import injected_adapter
from localqwen.adapters.methods import AdapterMethod, get_method
from localqwen.adapters.peft_methods import (
    is_4bit,
    keep_cpu_4bit_trainable,
    method_from_peft_config,
    peft_method_of,
)
from localqwen.adapters.targets import count_parameters, resolve_targets

if TYPE_CHECKING:
    from torch import nn


@dataclass
class AdapterInfo:
    method: str
    trainable_params: int
    total_params: int
    model: Any = None

    @property
    def trainable_percent(self) -> float:
        return 100.0 * self.trainable_params / max(self.total_params, 1)


def method_options(method: str) -> list[str]:
    """Option names ``apply_adapter`` accepts for ``method``."""
    return get_method(method).options


def apply_adapter(model: nn.Module, method: str, options: dict[str, Any] | None = None) -> AdapterInfo:
    """Add a fresh, trainable adapter to ``model``; ``info.model`` is the model to train."""
    spec = get_method(method)
    options = dict(options or {})
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise AdapterError(f"unknown option(s) {unknown} for {method}; known: {spec.options}")
    targets = list(options.pop("target_modules", None) or DEFAULT_TARGETS)
    if options.pop("include_mlp", False):
        targets += [t for t in MLP_TARGETS if t not in targets]
    checkpointing = bool(options.pop("gradient_checkpointing", False))
    config = spec.config_cls.from_dict({**options, "target_modules": targets})
    resolve_targets(model, config.target_modules, include_vision=config.include_vision)  # fail before changing
    model = spec.inject(_prepare_base(model, spec, checkpointing), config)
    trainable, total = count_parameters(model)
    return AdapterInfo(method=method, trainable_params=trainable, total_params=total, model=model)


def _prepare_base(model: nn.Module, spec: AdapterMethod, checkpointing: bool) -> nn.Module:
    """Ready the base model for an adapter: a 4-bit model through PEFT's k-bit preparation."""
    quantized = is_4bit(model)
    if spec.needs_4bit and not quantized:
        raise AdapterError(
            f"{spec.name} needs a base model loaded in 4-bit (from_pretrained(..., quantization_config="
            "localqwen.runtime.quantization.nf4_config())); use 'lora' for a full-precision model"
        )
    if not quantized:
        if checkpointing:
            _enable_checkpointing(model)
        return model
    from peft import prepare_model_for_kbit_training

    keep_cpu_4bit_trainable(model)
    if not getattr(model, "is_loaded_in_4bit", False):
        # PEFT picks its bitsandbytes-aware layers from this flag, which only from_pretrained sets;
        # without it a hand-built 4-bit model would get plain LoRA layers around Linear4bit.
        model.is_loaded_in_4bit = True
    # Casts norms to float32, freezes the base and enables input grads (+ checkpointing if asked).
    return prepare_model_for_kbit_training(model, use_gradient_checkpointing=checkpointing)


def adapter_method(model: Any) -> str | None:
    """Which registered method ``model`` carries, or None."""
    state = injected_adapter(model)
    return state.method if state is not None else peft_method_of(model)


def save_adapter(model: nn.Module, folder: str | os.PathLike[str]) -> Path:
    """Write the adapter weights (safetensors) and localqwen_adapter.json into ``folder``."""
    folder = Path(folder)
    if injected_adapter(model) is not None:
        io.save_own(model, folder)
        return folder
    method = peft_method_of(model)
    if method is None:
        raise AdapterError("this model has no adapter to save (apply_adapter or load_adapter first)")
    folder.mkdir(parents=True, exist_ok=True)
    # PEFT writes files one by one; write them beside the folder and move them in when complete.
    staging = Path(tempfile.mkdtemp(prefix=".adapter-", dir=folder.parent))
    try:
        # Only adapter tensors: a full state_dict() would make bitsandbytes unpack CPU-packed 4-bit weights.
        adapter_tensors = {n: p.detach() for n, p in model.named_parameters() if _is_peft_adapter_param(n)}
        model.save_pretrained(str(staging), safe_serialization=True, state_dict=adapter_tensors)
        for item in staging.iterdir():
            os.replace(item, folder / item.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    io.write_meta(folder, {"method": method})
    return folder


def needs_4bit_base(folder: str | os.PathLike[str]) -> bool:
    """Whether the adapter saved in ``folder`` was trained against a 4-bit NF4 base (QLoRA), so that
    its base must be loaded in 4-bit again. A plain PEFT folder (no LocalQwen description) says
    nothing about its base: False."""
    meta = io.read_meta(Path(folder))
    return bool(meta) and get_method(meta["method"], error=AdapterLoadError).needs_4bit


def load_adapter(base_model: nn.Module, folder: str | os.PathLike[str], *, trainable: bool = False):
    """Put the adapter saved in ``folder`` onto ``base_model``; returns the model to use.

    The method comes from the folder (a plain PEFT folder without our JSON also works). Shapes are
    checked first: a mismatch raises AdapterLoadError and leaves ``base_model`` unchanged.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise AdapterLoadError(f"adapter folder {folder} does not exist")
    if adapter_method(base_model) is not None:
        raise AdapterLoadError(f"the model already carries a {adapter_method(base_model)} adapter")
    meta = io.read_meta(folder)
    method = meta["method"] if meta else _method_of_peft_folder(folder, base_model)
    spec = get_method(method, error=AdapterLoadError)
    keep_cpu_4bit_trainable(base_model)
    if spec.own:
        model = io.load_own(base_model, folder, meta or {})
        if not trainable:
            for param in model.parameters():
                param.requires_grad_(False)
        return model
    if spec.needs_4bit and not is_4bit(base_model):
        raise AdapterLoadError(f"{folder} holds a {method} adapter: load the base model in 4-bit first")
    io.check_peft_shapes(base_model, folder)
    from peft import PeftModel

    model = PeftModel.from_pretrained(base_model, str(folder), is_trainable=trainable)
    model.localqwen_adapter_method = method
    return model


def _method_of_peft_folder(folder: Path, base_model: nn.Module) -> str:
    if not (folder / "adapter_config.json").is_file():
        raise AdapterLoadError(f"{folder} holds no adapter ({io.META_FILE} or adapter_config.json)")
    from peft import PeftConfig

    try:
        config = PeftConfig.from_pretrained(str(folder))
    except Exception as exc:  # PEFT raises several types for a broken config
        raise AdapterLoadError(f"{folder}/adapter_config.json is not a readable PEFT config: {exc}") from exc
    return method_from_peft_config(config, quantized=is_4bit(base_model))


def _is_peft_adapter_param(name: str) -> bool:
    return any(tag in name for tag in (".lora_A.", ".lora_B.", ".lora_magnitude_vector.", ".ia3_l."))


def _enable_checkpointing(model: nn.Module) -> None:
    enable = getattr(model, "activation_checkpointing_enable", None) or getattr(
        model, "gradient_checkpointing_enable", None
    )
    if enable is None:
        raise AdapterError(f"{type(model).__name__} does not support gradient checkpointing")
    enable()

