"""Injecting MoT-LoRA into a model, with the hooks that keep cached decoding correct."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from localqwen.adapters.injection import inject_layers
from localqwen.adapters.mot_lora.config import MoTLoRAConfig
from localqwen.adapters.mot_lora.layer import MixerStream

if TYPE_CHECKING:
    from torch import nn


def inject_mot_lora(model: nn.Module, config: MoTLoRAConfig) -> nn.Module:
    """Wrap the target linear layers of ``model`` in place with MoT-LoRA layers; returns ``model``.

    A forward pre-hook on ``model`` reads the KV cache and ``attention_mask`` (keyword arguments, as
    ``generate`` passes them) so every MoT layer knows whether this call starts new sequences or
    continues cached ones, and which positions are padding.
    """
    from localqwen.adapters.mot_lora.layer import MoTLoRALinear

    stream = MixerStream()
    state = inject_layers(model, "mot-lora", config, MoTLoRALinear, lambda base: MoTLoRALinear(base, config, stream))
    state.hooks.append(model.register_forward_pre_hook(_make_pre_hook(stream), with_kwargs=True))
    state.hooks.append(model.register_forward_hook(lambda module, args, output: stream.finish()))
    model.mot_stream = stream
    return model


def cache_length(past_key_values: Any) -> int:
    """Tokens already in a transformers KV cache (0 for none)."""
    if past_key_values is None:
        return 0
    if hasattr(past_key_values, "get_seq_length"):
        return int(past_key_values.get_seq_length())
    if isinstance(past_key_values, (tuple, list)) and past_key_values and past_key_values[0] is not None:
        return int(past_key_values[0][0].shape[-2])  # legacy tuple-of-tuples cache
    return 0


def passed_cache(kwargs: dict[str, Any]) -> Any:
    """The KV cache a forward call was given: ``generate`` passes it as ``cache`` from transformers
    5.24 on and as ``past_key_values`` before (and callers still may)."""
    cache = kwargs.get("past_key_values")
    return cache if cache is not None else kwargs.get("cache")


def _make_pre_hook(stream: MixerStream):
    def pre_hook(module, args, kwargs):
        stream.begin(cache_length(passed_cache(kwargs)), kwargs.get("attention_mask"))
        return None

    return pre_hook
