"""Saving and loading adapters: safetensors weights plus a JSON file naming the method.

Every folder gets ``localqwen_adapter.json`` ({"format", "version", "method", ...}). Our own methods
also write their config and ``adapter_model.safetensors``; PEFT methods write PEFT's usual files
beside it. Before anything touches the model, the saved tensor shapes are checked against the
model's layers, so a checkpoint for another model is refused with a clear error and the model is
left as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.adapters.errors import AdapterError, AdapterLoadError
from localqwen.adapters.injection import injected_adapter
from localqwen.adapters.methods import get_method
from localqwen.adapters.targets import resolve_targets
from localqwen.atomic import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    from torch import nn

META_FILE = "localqwen_adapter.json"
WEIGHTS_FILE = "adapter_model.safetensors"
FORMAT = "localqwen-adapter"
VERSION = 1
PEFT_PREFIX = "base_model.model."


def write_meta(folder: Path, meta: dict[str, Any]) -> None:
    atomic_write_text(folder / META_FILE, json.dumps({"format": FORMAT, "version": VERSION, **meta}, indent=2))


def read_meta(folder: Path) -> dict[str, Any] | None:
    """The folder's localqwen_adapter.json, or None when it has none (e.g. a plain PEFT folder)."""
    path = folder / META_FILE
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AdapterLoadError(f"{path} is not readable JSON: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or "method" not in meta:
        raise AdapterLoadError(f"{path} is not a LocalQwen adapter description (format {FORMAT!r} with a method)")
    if meta.get("version", VERSION) > VERSION:
        raise AdapterLoadError(f"{path} was written by a newer LocalQwen (version {meta['version']} > {VERSION})")
    return meta


def saved_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape, read from the safetensors header only."""
    from safetensors import safe_open

    if not path.is_file():
        raise AdapterLoadError(f"adapter weights {path} are missing")
    try:
        with safe_open(str(path), framework="pt") as handle:
            return {key: tuple(handle.get_slice(key).get_shape()) for key in handle.keys()}  # noqa: SIM118 (safe_open is not a dict)
    except Exception as exc:  # safetensors raises its own error types for corrupt headers
        raise AdapterLoadError(f"{path} is not a readable safetensors file: {exc}") from exc


def _shape_report(expected: dict[str, tuple], actual: dict[str, tuple]) -> list[str]:
    problems = []
    missing = sorted(set(expected) - set(actual))
    unexpected = sorted(set(actual) - set(expected))
    mismatched = [f"{k}: saved {list(actual[k])}, model needs {list(expected[k])}"
                  for k in sorted(set(expected) & set(actual)) if tuple(actual[k]) != tuple(expected[k])]
    for label, items in (("missing", missing), ("not in this model", unexpected), ("wrong shape", mismatched)):
        if items:
            more = f" (+{len(items) - 3} more)" if len(items) > 3 else ""
            problems.append(f"{len(items)} tensor(s) {label}: {items[:3]}{more}")
    return problems


# ---- our own methods ---------------------------------------------------------------------------


def save_own(model: nn.Module, folder: Path) -> None:
    from safetensors.torch import save

    state = injected_adapter(model)
    shapes_of = get_method(state.method).saved_shapes
    assert shapes_of is not None, f"{state.method} is not one of our own methods"
    tensors = {}
    for name, (in_f, out_f) in state.modules.items():
        for key in shapes_of(in_f, out_f, state.config):
            owner, _, leaf = f"{name}.{key}".rpartition(".")
            tensors[f"{name}.{key}"] = getattr(model.get_submodule(owner), leaf).detach().cpu().contiguous()
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / WEIGHTS_FILE, save(tensors, metadata={"format": FORMAT}))
    modules = {name: list(dims) for name, dims in state.modules.items()}
    write_meta(folder, {"method": state.method, "config": state.config.to_dict(), "modules": modules})


def load_own(model: nn.Module, folder: Path, meta: dict[str, Any]) -> nn.Module:
    import torch
    from safetensors import safe_open

    spec = get_method(meta["method"], error=AdapterLoadError)
    shapes_of = spec.saved_shapes
    assert shapes_of is not None, f"{spec.name} is not one of our own methods"
    try:
        config = spec.config_cls.from_dict(meta.get("config") or {})
    except (AdapterError, TypeError) as exc:
        raise AdapterLoadError(f"{folder / META_FILE}: bad {meta['method']} config: {exc}") from exc
    try:
        targets = resolve_targets(model, config.target_modules, include_vision=config.include_vision)
    except AdapterError as exc:
        raise AdapterLoadError(f"adapter in {folder} does not fit this model: {exc}") from exc
    expected = {}
    for name, module in targets:
        for key, shape in shapes_of(module.in_features, module.out_features, config).items():
            expected[f"{name}.{key}"] = shape
    problems = _shape_report(expected, saved_shapes(folder / WEIGHTS_FILE))
    if problems:
        raise AdapterLoadError(f"adapter in {folder} does not match this model: " + "; ".join(problems))
    spec.inject(model, config)
    with safe_open(str(folder / WEIGHTS_FILE), framework="pt") as handle, torch.no_grad():
        for key in expected:
            owner, _, leaf = key.rpartition(".")
            target = getattr(model.get_submodule(owner), leaf)
            target.copy_(handle.get_tensor(key).to(device=target.device, dtype=target.dtype))
    return model


# ---- PEFT methods --------------------------------------------------------------------------------


def check_peft_shapes(model: nn.Module, folder: Path) -> None:
    """Refuse a PEFT adapter whose layers are absent from ``model`` or sized for another model."""
    problems = []
    for key, shape in saved_shapes(folder / WEIGHTS_FILE).items():
        path = key[len(PEFT_PREFIX):] if key.startswith(PEFT_PREFIX) else key
        for suffix, check in _PEFT_CHECKS.items():
            if path.endswith(suffix):
                module_path = path[: -len(suffix)]
                try:
                    module = model.get_submodule(module_path)
                except AttributeError:
                    problems.append(f"{module_path} is not in this model")
                    break
                expected = check(module, shape)
                if expected is not None and tuple(shape) != tuple(expected):
                    problems.append(f"{key}: saved {list(shape)}, model needs {list(expected)}")
                break
        if len(problems) >= 3:
            break
    if problems:
        raise AdapterLoadError(f"PEFT adapter in {folder} does not match this model: " + "; ".join(problems))


def _features(module: Any) -> tuple[int | None, int | None]:
    return getattr(module, "in_features", None), getattr(module, "out_features", None)


_PEFT_CHECKS: dict[str, Callable[[Any, tuple], tuple | None]] = {
    ".lora_A.weight": lambda m, s: (s[0], _features(m)[0]),
    ".lora_B.weight": lambda m, s: (_features(m)[1], s[1]),
    ".lora_magnitude_vector": lambda m, s: (_features(m)[1],),
    # IA3 scales outputs (out, 1), or inputs (1, in) for feed-forward modules.
    ".ia3_l": lambda m, s: (_features(m)[1], 1) if s[-1] == 1 and s[0] != 1 else (1, _features(m)[0]),
}
