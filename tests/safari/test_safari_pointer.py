"""The pointer lesson's head attention (pointer.py): the probabilities it recomputes are the layer's
own (checked against eager attention's weights and head outputs, every head, padded rows), and its
loss moves them."""

from __future__ import annotations

import math

import pytest
from localqwen_safari.pointer import HeadAttention, pointer_loss


def _model(path):
    import torch
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")


def test_the_heads_probabilities_are_the_layers_own(tiny_qwen3_vl_path):
    import torch

    model = _model(tiny_qwen3_vl_path)
    text = model.model.language_model
    heads = model.config.text_config.num_attention_heads
    assert heads // model.config.text_config.num_key_value_heads > 1  # grouped queries: the key head is shared
    probes = [HeadAttention(text.layers[1], head) for head in range(heads)]
    mixed = []  # what the layer's output projection gets: every head's output, side by side
    text.layers[1].self_attn.o_proj.register_forward_pre_hook(lambda module, args: mixed.append(args[0]))
    torch.manual_seed(0)
    ids = torch.randint(10, 200, (2, 24))
    mask = torch.ones_like(ids)
    mask[1, 15:] = 0  # the second row is right-padded after 15 tokens
    with torch.no_grad():
        output = text(input_ids=ids, attention_mask=mask, output_attentions=True)
    for head, probe in enumerate(probes):
        mine = probe.probabilities([24, 15])
        eager = output.attentions[1][:, head]
        assert torch.allclose(mine[0], eager[0], atol=1e-6)
        assert torch.allclose(mine[1, :15, :15], eager[1, :15, :15], atol=1e-6)
        assert torch.all(mine[1, :15, 15:] == 0)  # padding gets nothing
        dim = model.config.text_config.head_dim
        handed_on = mixed[0][..., head * dim:(head + 1) * dim]
        assert torch.allclose(probe.output(mine)[0], handed_on[0], atol=1e-5)
        assert torch.allclose(probe.output(mine)[1, :15], handed_on[1, :15], atol=1e-5)
        probe.remove()
    with pytest.raises(ValueError, match="out of range"):
        HeadAttention(text.layers[1], heads)
    with pytest.raises(RuntimeError, match="no forward pass"):
        HeadAttention(text.layers[0], 0).probabilities([24])


def test_the_pointer_loss_is_low_where_the_head_looks_at_the_target():
    import torch

    uniform = torch.full((1, 4, 4), 0.25)
    looking = torch.tensor([[[0.0, 0.0, 1.0, 0.0]] * 4])
    assert pointer_loss(uniform, [(0, 2, 3)], [[2]]).item() == pytest.approx(math.log(4))
    assert pointer_loss(looking, [(0, 2, 3)], [[2]]).item() == pytest.approx(0.0, abs=1e-6)
    assert pointer_loss(uniform, [], []).item() == 0.0  # no target in any row's view


def test_the_pointer_loss_teaches_the_head_to_look(tiny_qwen3_vl_path):
    import torch

    model = _model(tiny_qwen3_vl_path)
    text = model.model.language_model
    probe = HeadAttention(text.layers[1], 0)
    torch.manual_seed(1)
    ids = torch.randint(10, 200, (4, 20))
    target = [[3], [7], [5], [11]]  # each row's key to look at from its last four positions
    queries = [(n, 16, 19) for n in range(4)]
    optimiser = torch.optim.Adam(text.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        text(input_ids=ids, attention_mask=torch.ones_like(ids))
        loss = pointer_loss(probe.probabilities([20] * 4), queries, target)
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
