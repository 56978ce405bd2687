"""MoE-LoRA options."""

from __future__ import annotations

from dataclasses import dataclass

from localqwen.adapters.config_base import LowRankConfig, _require

BALANCE_MODES = ("aux_loss", "bias", "none")


@dataclass
class MoELoRAConfig(LowRankConfig):
    """E rank-r LoRA experts per target layer and a linear router fed the layer's input.

    balance:
      "aux_loss"  Switch-Transformer load-balancing loss ``coef * E * sum_i f_i * P_i`` whose gradient
                  is added during backward (no trainer change needed; see layer._AttachAuxLoss).
      "bias"      auxiliary-loss-free balancing (DeepSeek-V3): a per-expert bias added to the scores
                  used for top-k selection only, nudged by ``bias_update_rate`` toward equal load after
                  each optimizer step (``router_metrics.router_step``).
      "none"      no balancing (experts may collapse; kept for comparison).
    """

    num_experts: int = 4
    top_k: int = 2
    balance: str = "aux_loss"
    aux_loss_coef: float = 0.01
    bias_update_rate: float = 0.001
    router_init_std: float = 0.02

    def validate(self) -> None:
        super().validate()
        _require(self.num_experts >= 2, f"num_experts must be >= 2, got {self.num_experts!r}")
        _require(
            1 <= self.top_k <= self.num_experts,
            f"top_k must be between 1 and num_experts ({self.num_experts}), got {self.top_k!r}",
        )
        _require(self.balance in BALANCE_MODES, f"balance must be one of {BALANCE_MODES}, got {self.balance!r}")
        _require(
            self.balance != "bias" or self.top_k >= 2,
            "balance='bias' needs top_k >= 2: with one expert per token the gate is its raw probability, "
            "and the bias would route tokens to experts whose gate is near zero (use 'aux_loss' for top-1)",
        )
        _require(self.aux_loss_coef >= 0, f"aux_loss_coef must be >= 0, got {self.aux_loss_coef!r}")
        _require(self.bias_update_rate >= 0, f"bias_update_rate must be >= 0, got {self.bias_update_rate!r}")
        _require(self.router_init_std > 0, f"router_init_std must be > 0, got {self.router_init_std!r}")
