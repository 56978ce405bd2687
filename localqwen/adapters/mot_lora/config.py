"""MoT-LoRA options."""

from __future__ import annotations

from dataclasses import dataclass

from localqwen.adapters.config_base import LowRankConfig, _require


@dataclass
class MoTLoRAConfig(LowRankConfig):
    """LoRA plus a causal depthwise convolution of width ``kernel_size`` over the r low-rank channels.

    The mixer adds ``r * kernel_size`` parameters per layer (a LoRA adds ``r * (in + out)``) and
    starts as the identity (weight 1 on the current token), so a fresh MoT-LoRA equals a fresh LoRA.
    """

    kernel_size: int = 4

    def validate(self) -> None:
        super().validate()
        _require(
            isinstance(self.kernel_size, int) and 1 <= self.kernel_size <= 64,
            f"kernel_size must be an integer in [1, 64], got {self.kernel_size!r}",
        )
