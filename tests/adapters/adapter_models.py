"""Small models for the adapter tests: a two-layer sequence net and the tiny Qwen3-VL."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

VOCAB, HIDDEN, INNER = 32, 16, 64
# (name, in_features, out_features) of the layers the tests target
TINY_LAYERS = [("q_proj", HIDDEN, INNER), ("v_proj", INNER, HIDDEN)]
TINY_TARGETS = ["q_proj", "v_proj"]


class TinyNet(nn.Module):
    """Embedding -> q_proj -> tanh -> v_proj -> head, over (batch, seq) token ids."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.q_proj = nn.Linear(HIDDEN, INNER)
        self.v_proj = nn.Linear(INNER, HIDDEN, bias=False)
        self.head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, input_ids, attention_mask=None, past_key_values=None):
        return self.head(self.v_proj(torch.tanh(self.q_proj(self.embed(input_ids)))))


def to_4bit(linear: nn.Linear) -> nn.Module:
    """A real bitsandbytes NF4 Linear4bit holding ``linear``'s weights (runs on CPU since bnb 0.48)."""
    import bitsandbytes as bnb

    layer = bnb.nn.Linear4bit(
        linear.in_features, linear.out_features, bias=linear.bias is not None,
        compute_dtype=torch.float32, quant_type="nf4",
    )
    layer.weight = bnb.nn.Params4bit(linear.weight.data.clone(), requires_grad=False, quant_type="nf4")
    if linear.bias is not None:
        layer.bias = nn.Parameter(linear.bias.data.clone(), requires_grad=False)
    layer = layer.to("cpu")  # quantizes
    layer.support_avx512bf16_for_cpu = False  # see peft_methods.keep_cpu_4bit_trainable
    return layer


def tiny_net(kind: str, seed: int = 0) -> TinyNet:
    torch.manual_seed(seed)
    net = TinyNet()
    if kind == "linear4bit":
        net.q_proj = to_4bit(net.q_proj)
        net.v_proj = to_4bit(net.v_proj)
    return net.eval()


def load_tiny_vl(path: Path, *, four_bit: bool = False):
    from transformers import AutoModelForImageTextToText

    from localqwen.adapters.peft_methods import keep_cpu_4bit_trainable
    from localqwen.runtime.quantization import nf4_config

    if not four_bit:
        return AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32)
    model = AutoModelForImageTextToText.from_pretrained(
        path, quantization_config=nf4_config("float32"), device_map="cpu"
    )
    keep_cpu_4bit_trainable(model)  # before any eval forward packs the weights
    return model


def randomize_adapters(model: nn.Module, seed: int = 1, scale: float = 0.2) -> None:
    """Give every trainable adapter tensor random values so the adapter changes outputs."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, param in sorted(model.named_parameters()):
            if param.requires_grad:
                param.add_(torch.randn(param.shape, generator=generator) * scale)
