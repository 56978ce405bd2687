"""The MoE-LoRA layer: wraps an nn.Linear or bitsandbytes Linear4bit and adds routed LoRA experts.

Classes are built on first use (PEP 562 ``__getattr__``) so importing this file does not import
torch; ``from localqwen.adapters.moe_lora.layer import MoELoRALinear`` works as usual.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from localqwen.adapters.moe_lora.config import MoELoRAConfig

__all__ = ["MoELoRALinear", "expected_shapes", "trainable_per_layer"]  # noqa: F822 (built lazily by __getattr__)


def expected_shapes(in_features: int, out_features: int, config: MoELoRAConfig) -> dict[str, tuple[int, ...]]:
    """Saved tensor shapes of one wrapped layer (used to refuse mismatching checkpoints)."""
    experts_rank = config.num_experts * config.r
    return {
        "lora_A": (experts_rank, in_features),
        "lora_B": (out_features, experts_rank),
        "router.weight": (config.num_experts, in_features),
        "routing_bias": (config.num_experts,),
    }


def trainable_per_layer(name: str, in_features: int, out_features: int, config: MoELoRAConfig) -> int:
    """E experts of rank r plus the router (the routing bias is a buffer, not trained)."""
    return config.num_experts * config.r * (in_features + out_features) + config.num_experts * in_features


def __getattr__(name: str) -> Any:
    if name == "MoELoRALinear":
        return _classes()[name]
    raise AttributeError(name)


@functools.cache
def _classes() -> dict[str, type]:
    import torch
    from torch import nn
    from torch.nn import functional as F

    from localqwen.adapters.targets import adapter_device

    def _cast(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return tensor if tensor.dtype == dtype else tensor.to(dtype)  # skips a dispatch per call

    class _AuxLossGradient(torch.autograd.Function):
        """Returns ``output`` unchanged; in backward adds the Switch aux loss's gradient to ``probs``.

        The loss ``c * E * sum_i f_i * mean_n p_in`` (f = load shares, not differentiable) has the
        constant gradient ``c * E * f_i / N`` with respect to ``p_in``, so it is injected directly:
        whatever loss is backpropagated through the layer output gets the balancing term, the
        trainer needs no extra code, it works under (re-entrant or not) gradient checkpointing where
        a loss stored on the side would have no graph, and it costs one node instead of a subgraph.
        """

        @staticmethod
        def forward(ctx, output, probs, grad_scale):
            ctx.save_for_backward(grad_scale)
            ctx.probs_shape = probs.shape
            return output

        @staticmethod
        def backward(ctx, grad_output):
            (grad_scale,) = ctx.saved_tensors
            return grad_output, grad_scale.expand(ctx.probs_shape), None

    class MoELoRALinear(nn.Module):
        """``base(x) + scaling * sum_{e in topk(x)} w_e(x) * B_e A_e dropout(x)``.

        The E experts' A matrices are stacked into one (E*r, in) matrix and the B matrices into one
        (out, E*r) matrix: routing becomes a per-token gate on the E*r low-rank channels, so the whole
        layer is two matmuls plus a gate (dense dispatch). That costs E times LoRA's adapter FLOPs,
        still small next to the base matmul, and avoids gather/scatter overhead that dominates for
        small E. Unselected experts get gate 0, hence no gradient.
        """

        adapter_method = "moe-lora"

        def __init__(self, base_layer: nn.Module, config: MoELoRAConfig):
            super().__init__()
            self.base_layer = base_layer
            self.in_features = base_layer.in_features
            self.out_features = base_layer.out_features
            self.num_experts, self.top_k, self.r = config.num_experts, config.top_k, config.r
            self.scaling = config.scaling
            self.balance = config.balance
            self.aux_loss_coef = config.aux_loss_coef
            self.bias_update_rate = config.bias_update_rate
            device = adapter_device(base_layer)
            # Adapter weights stay float32 whatever the base dtype (4-bit, bf16), like PEFT's default.
            self.lora_A = nn.Parameter(torch.empty(self.num_experts * self.r, self.in_features, device=device))
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))  # PEFT's lora_A init, per expert
            self.lora_B = nn.Parameter(torch.zeros(self.out_features, self.num_experts * self.r, device=device))
            self.router = nn.Linear(self.in_features, self.num_experts, bias=False, device=device)
            nn.init.normal_(self.router.weight, std=config.router_init_std)
            self.register_buffer("routing_bias", torch.zeros(self.num_experts, device=device))
            self.dropout = nn.Dropout(config.dropout) if config.dropout > 0 else nn.Identity()
            self.last_stats: dict[str, torch.Tensor] | None = None

        def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            result = self.base_layer(x, *args, **kwargs)
            dtype = self.lora_A.dtype
            tokens = _cast(x, dtype).reshape(-1, self.in_features)
            gates, probs, selected = self._route(tokens)
            low_rank = F.linear(self.dropout(tokens), self.lora_A).view(-1, self.num_experts, self.r)
            low_rank = low_rank * _cast(gates.t(), dtype).unsqueeze(-1)
            delta = F.linear(low_rank.view(-1, self.num_experts * self.r), self.lora_B)
            delta = delta.view(*x.shape[:-1], self.out_features)
            if self.training:
                self.last_stats = {"probs": probs.detach(), "selected": selected}
                if self.balance == "aux_loss" and self.aux_loss_coef > 0 and probs.requires_grad:
                    tokens_count = probs.shape[1]
                    # d aux / d p_in = c * E * f_i / N with f_i = (tokens routed to i) / (N * k)
                    grad_scale = selected.sum(dim=1, keepdim=True) * (
                        self.aux_loss_coef * self.num_experts / (tokens_count * tokens_count * self.top_k)
                    )
                    delta = _AuxLossGradient.apply(delta, probs, grad_scale)
            return result + _cast(delta, result.dtype)

        def _route(self, tokens: torch.Tensor):
            """Gates (E, N): top-k router probabilities per token (renormalised for k > 1), zero
            elsewhere, times the LoRA scaling.

            Kept experts-first: softmax and top-k over a length-E last axis are several times
            slower on CPU than over the first axis of an (E, N) tensor.
            """
            probs = _cast(self.router.weight @ tokens.t(), torch.float32).softmax(dim=0)
            scores = probs + self.routing_bias.unsqueeze(-1) if self.balance == "bias" else probs
            selected = scores >= scores.topk(self.top_k, dim=0).values[-1:]  # an exact tie keeps all tied
            gates = probs * selected
            if self.top_k > 1:
                gates = gates * (self.scaling / gates.sum(dim=0, keepdim=True))
            else:
                # top-1 keeps the raw probability (Switch Transformer): renormalised it would be the
                # constant 1 and the router would get no gradient from the task at all.
                gates = gates * self.scaling
            return gates, probs, selected

        @torch.no_grad()
        def routing_stats(self) -> dict[str, torch.Tensor] | None:
            """Expert load shares, mean routing entropy and aux loss of the last training forward."""
            if self.last_stats is None:
                return None
            probs, selected = self.last_stats["probs"], self.last_stats["selected"]
            load = selected.sum(dim=1).float() / selected.sum().clamp_min(1)
            entropy = -(probs * probs.clamp_min(1e-9).log()).sum(dim=0).mean()
            aux_loss = probs.new_zeros(())
            if self.balance == "aux_loss":
                # Switch Transformer: c * E * sum_i f_i * P_i (c * 1.0 at perfectly even routing).
                aux_loss = self.aux_loss_coef * self.num_experts * (load * probs.mean(dim=1)).sum()
            return {"load": load, "router_entropy": entropy, "aux_loss": aux_loss}

        @torch.no_grad()
        def update_routing_bias(self) -> None:
            """Aux-loss-free step: raise the bias of under-loaded experts, lower over-loaded ones."""
            if self.balance != "bias" or self.last_stats is None:
                return
            load = self.routing_stats()["load"].to(self.routing_bias.device)
            self.routing_bias += self.bias_update_rate * torch.sign(load.mean() - load)

        def extra_repr(self) -> str:
            return (
                f"experts={self.num_experts}, top_k={self.top_k}, r={self.r}, balance={self.balance}, "
                f"in={self.in_features}, out={self.out_features}"
            )

    MoELoRALinear.__module__ = __name__
    return {"MoELoRALinear": MoELoRALinear}
