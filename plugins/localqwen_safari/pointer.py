"""The pointer lesson's view of one attention head: its attention probabilities, recomputed from
what the layer was given, so a loss can ask them to fall on the target's image tokens.

Why: after the marking lesson (tiny_training.py) the target's image tokens know *that* they hold
the target, but the reply still gave the target's place from the replies' prior, not from the image
(docs/safari_learning.md, "The place is not read off the image"). Reading a place off an image is what
attention does when one head attends to the marked token: its value then carries that token's features, whose
place the vision warm-up taught. The pointer lesson supervises that step directly.

The model runs with its usual fused attention (eager attention was slower on this CPU); a forward
pre-hook keeps the layer's normed input and rotary embeddings, and :meth:`HeadAttention.probabilities`
redoes the query-key product (and :meth:`HeadAttention.output`, the values it hands on) for the one
head, exactly as the layer computes them (tested against eager attention).
"""

from __future__ import annotations

from typing import Any


class HeadAttention:
    """Keeps what ``layer`` (a Qwen3-VL text decoder layer) gives its attention on every forward pass."""

    def __init__(self, layer: Any, head: int = 0) -> None:
        self.attention = layer.self_attn
        if not 0 <= head < self.attention.config.num_attention_heads:
            raise ValueError(f"head {head} out of range: the layer has {self.attention.config.num_attention_heads}")
        self.head = head
        self.inputs: tuple[Any, Any] | None = None
        self._handle = self.attention.register_forward_pre_hook(self._keep, with_kwargs=True)

    def _keep(self, module: Any, args: tuple, kwargs: dict) -> None:
        hidden = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
        self.inputs = (hidden, kwargs["position_embeddings"])

    def remove(self) -> None:
        self._handle.remove()

    def probabilities(self, lengths: list[int]) -> Any:
        """The head's attention probabilities on the last forward pass, (batch, query, key), causal,
        keys past each row's length (right padding) masked; rows past their length are garbage."""
        import torch
        from transformers.models.qwen3_vl.modeling_qwen3_vl import rotate_half

        if self.inputs is None:
            raise RuntimeError("no forward pass seen yet")
        hidden, (cos, sin) = self.inputs
        attention = self.attention
        query = attention.q_norm(self._project(attention.q_proj, self.head, hidden))
        key = attention.k_norm(self._project(attention.k_proj, self._kv_head, hidden))
        # one head: (batch, seq, head_dim), the layout of cos and sin
        query, key = query * cos + rotate_half(query) * sin, key * cos + rotate_half(key) * sin
        scores = query @ key.transpose(-1, -2) * attention.scaling
        length = scores.shape[-1]
        positions = torch.arange(length)
        allowed = positions[None, :] <= positions[:, None]  # causal
        allowed = allowed[None] & (positions[None, None, :] < torch.tensor(lengths)[:, None, None])
        return scores.masked_fill(~allowed, float("-inf")).softmax(-1)

    def output(self, probabilities: Any) -> Any:
        """What the head hands on, (batch, query, head_dim): ``probabilities`` times its values (before
        the layer's output projection mixes the heads)."""
        if self.inputs is None:
            raise RuntimeError("no forward pass seen yet")
        return probabilities @ self._project(self.attention.v_proj, self._kv_head, self.inputs[0])

    @property
    def _kv_head(self) -> int:
        """The key-value head this query head shares (grouped-query attention)."""
        return self.head // self.attention.num_key_value_groups

    def _project(self, projection: Any, head: int, hidden: Any) -> Any:
        """``projection``'s rows for one head only, applied to ``hidden``: (batch, seq, head_dim)."""
        import torch

        rows = slice(head * self.attention.head_dim, (head + 1) * self.attention.head_dim)
        return torch.nn.functional.linear(hidden, projection.weight[rows],
                                          None if projection.bias is None else projection.bias[rows])


def pointer_loss(probabilities: Any, queries: list[tuple[int, int, int]], targets: list[list[int]]) -> Any:
    """Minus the log of the attention each query (row, first position, last position) puts on its
    row's target keys (``targets[n]``: sequence positions): low when the head looks at the target."""
    import torch

    losses = []
    for (row, first, last), keys in zip(queries, targets, strict=True):
        mass = probabilities[row, first:last + 1][:, keys].sum(-1)
        losses.append(-torch.log(mass.clamp_min(1e-9)))
    return torch.cat(losses).mean() if losses else torch.zeros(())
