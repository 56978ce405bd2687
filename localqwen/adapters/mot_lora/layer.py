"""The MoT-LoRA layer: LoRA whose r low-rank states are mixed along the sequence, causally.

``delta_t = scaling * B( sum_{j<K} w_j * (A x)_{t-j} )`` with one K-tap filter per low-rank channel
(depthwise), so position t only ever sees positions <= t (the seed's mixer padded both sides and
read future tokens). During cached generation the layer keeps the last K-1 low-rank states of each
sequence in its :class:`MixerStream` so a one-token step sees the same window a full forward would.

Classes are built on first use (PEP 562) so importing this file does not import torch.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from localqwen.adapters.mot_lora.config import MoTLoRAConfig

__all__ = ["MoTLoRALinear", "MixerStream", "expected_shapes", "trainable_per_layer"]  # noqa: F822 (built lazily)


def expected_shapes(in_features: int, out_features: int, config: MoTLoRAConfig) -> dict[str, tuple[int, ...]]:
    return {
        "lora_A": (config.r, in_features),
        "lora_B": (out_features, config.r),
        "mixer": (config.r, config.kernel_size),
    }


def trainable_per_layer(name: str, in_features: int, out_features: int, config: MoTLoRAConfig) -> int:
    """A LoRA of rank r plus the depthwise mixer (r channels x kernel_size taps)."""
    return config.r * (in_features + out_features) + config.r * config.kernel_size


class MixerStream:
    """Per-model decoding state shared by all MoT layers of one model.

    The model's forward pre-hook calls :meth:`begin` with the KV cache length and the 2-D attention
    mask: a cache length of 0 means a new prompt (buffers are dropped); otherwise the chunk continues
    the sequences seen so far, and the cache length must equal the number of tokens seen, or the
    buffers would silently pair with the wrong tokens (an error is raised instead).
    """

    def __init__(self) -> None:
        self.tails: dict[int, Any] = {}  # id(layer) -> (batch, K-1, r) last low-rank states
        self.mask = None  # (batch, past + chunk) attention mask of the current call, or None
        self.continuing = False
        self.seen = 0
        self.past_length = 0
        self.chunk_len = 0

    def reset(self) -> None:
        self.tails.clear()
        self.mask, self.continuing = None, False
        self.seen = self.past_length = self.chunk_len = 0

    def begin(self, past_length: int, attention_mask: Any = None) -> None:
        if past_length == 0:
            self.tails.clear()
            self.continuing = False
        elif past_length != self.seen or not self.tails:
            raise RuntimeError(
                f"MoT-LoRA decoding state is out of step with the KV cache (cache holds {past_length} "
                f"tokens, the mixer saw {self.seen}). Start from an empty cache; beam search, cache "
                "cropping (assisted decoding) and evaluation in training mode are not supported."
            )
        else:
            self.continuing = True
        self.past_length = past_length
        # Only a 2-D (batch, length) padding mask is used; 4-D or dict masks (prepared by the model) are not.
        mask = attention_mask if getattr(attention_mask, "ndim", None) == 2 else None
        # An all-ones mask (no padding) changes nothing: skip the multiply in every layer.
        self.mask = None if mask is None or bool(mask.all()) else mask
        self.chunk_len = 0

    def finish(self) -> None:
        # The mask stays until the next call: gradient checkpointing re-runs the layers during
        # backward, after the forward has returned, and must see the same padding.
        self.seen = self.past_length + self.chunk_len

    def chunk_mask(self, length: int):
        if self.mask is None or self.mask.shape[-1] < length:
            return None
        return self.mask[:, -length:]


def __getattr__(name: str) -> Any:
    if name == "MoTLoRALinear":
        return _classes()[name]
    raise AttributeError(name)


@functools.cache
def _classes() -> dict[str, type]:
    import torch
    from torch import nn
    from torch.nn import functional as F

    from localqwen.adapters.targets import adapter_device

    class MoTLoRALinear(nn.Module):
        """``base(x) + scaling * B(causal_depthwise_conv(A dropout(x)))`` on (batch, seq, in) inputs.

        2-D inputs (Qwen3-VL's vision tower feeds patches as (patches, features)) have no causal
        sequence axis; they get the plain LoRA path.
        """

        adapter_method = "mot-lora"

        def __init__(self, base_layer: nn.Module, config: MoTLoRAConfig, stream: MixerStream | None = None):
            super().__init__()
            self.base_layer = base_layer
            self.in_features = base_layer.in_features
            self.out_features = base_layer.out_features
            self.r, self.kernel_size, self.scaling = config.r, config.kernel_size, config.scaling
            device = adapter_device(base_layer)
            self.lora_A = nn.Parameter(torch.empty(self.r, self.in_features, device=device))
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            self.lora_B = nn.Parameter(torch.zeros(self.out_features, self.r, device=device))
            # (r, K) taps per low-rank channel; the last tap is the current token. Identity start = LoRA.
            mixer = torch.zeros(self.r, self.kernel_size, device=device)
            mixer[:, -1] = 1.0
            self.mixer = nn.Parameter(mixer)
            self.dropout = nn.Dropout(config.dropout) if config.dropout > 0 else nn.Identity()
            self.stream = stream

        def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            result = self.base_layer(x, *args, **kwargs)
            dtype = self.lora_A.dtype
            low_rank = F.linear(self.dropout(x if x.dtype == dtype else x.to(dtype)), self.lora_A)
            if low_rank.dim() == 3:
                low_rank = self._mix(low_rank)  # the LoRA scaling is folded into the (r, K) taps
            else:
                low_rank = low_rank * self.scaling
            delta = F.linear(low_rank, self.lora_B)
            return result + (delta if delta.dtype == result.dtype else delta.to(result.dtype))

        def _mix(self, states: torch.Tensor) -> torch.Tensor:
            """Causal depthwise conv over (batch, seq, r) states, continuing cached sequences."""
            stream, width = self.stream, self.kernel_size - 1
            history = None
            if stream is not None:
                stream.chunk_len = states.shape[1]
                mask = stream.chunk_mask(states.shape[1])
                if mask is not None:  # padding tokens contribute nothing to their neighbours
                    states = states * mask.unsqueeze(-1).to(states.dtype)
                if stream.continuing:
                    history = stream.tails.get(id(self))
            if width == 0:
                return states * (self.mixer[:, 0] * self.scaling)
            if history is None:
                window = F.pad(states, (0, 0, width, 0))  # left padding only: no future tokens
            else:
                if history.shape[0] != states.shape[0]:
                    raise RuntimeError(
                        f"MoT-LoRA: batch size changed from {history.shape[0]} to {states.shape[0]} "
                        "while continuing cached sequences"
                    )
                window = torch.cat([history.to(states.dtype), states], dim=1)
            if stream is not None and not (self.training and torch.is_grad_enabled()):
                stream.tails[id(self)] = window[:, -width:].detach()
            # (batch, seq, r, K) sliding views times the per-channel taps: a depthwise causal conv.
            # Measured faster on CPU than grouped conv1d for these small r (fewer, cheaper backward ops).
            return (window.unfold(1, self.kernel_size, 1) * (self.mixer * self.scaling)).sum(dim=-1)

        def extra_repr(self) -> str:
            return f"r={self.r}, kernel_size={self.kernel_size}, in={self.in_features}, out={self.out_features}"

    MoTLoRALinear.__module__ = __name__
    return {"MoTLoRALinear": MoTLoRALinear}
