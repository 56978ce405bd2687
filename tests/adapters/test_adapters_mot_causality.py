"""MoT-LoRA's token mixer is causal, in a full forward and in cached incremental decoding."""

from __future__ import annotations

import torch
from adapter_models import load_tiny_vl, randomize_adapters, tiny_net

from localqwen.adapters import apply_adapter


def mot_model(base, **options):
    model = apply_adapter(base, "mot-lora", {"r": 4, "kernel_size": 3, **options}).model
    randomize_adapters(model, scale=0.3)
    return model.eval()


def test_perturbing_token_j_changes_nothing_before_j():
    # TinyNet has no attention: the mixer is its only path between positions.
    model = mot_model(tiny_net("linear"), target_modules=["q_proj", "v_proj"])
    ids = torch.randint(0, 32, (1, 10))
    j = 5
    changed = ids.clone()
    changed[0, j] = (ids[0, j] + 1) % 32
    with torch.no_grad():
        a, b = model(ids), model(changed)
    assert torch.equal(a[:, :j], b[:, :j])
    diff = (a - b).abs().amax(dim=-1)[0]
    # positions j .. j+K-1 see token j through the mixer (two stacked layers reach j+4), later ones do not
    assert (diff[j : j + 3] > 1e-4).all()
    assert (diff[j + 5 :] == 0).all()


def step_by_step_logits(model, ids, mask):
    """Feed the sequence one token at a time through the KV cache; logits of every position."""
    from transformers import DynamicCache

    cache, outputs = DynamicCache(config=model.config), []
    with torch.no_grad():
        for t in range(ids.shape[1]):
            out = model(input_ids=ids[:, t : t + 1], attention_mask=mask[:, : t + 1], past_key_values=cache, use_cache=True)
            outputs.append(out.logits[:, -1])
    return torch.stack(outputs, dim=1)


def test_incremental_decoding_matches_full_forward_with_left_padding(tiny_qwen3_vl_path):
    model = mot_model(load_tiny_vl(tiny_qwen3_vl_path), include_mlp=True)
    torch.manual_seed(0)
    ids = torch.randint(0, 500, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # second row is left-padded
    ids[1, :3] = 0
    with torch.no_grad():
        full = model(input_ids=ids, attention_mask=mask).logits
    steps = step_by_step_logits(model, ids, mask)
    torch.testing.assert_close(steps[0], full[0], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(steps[1, 3:], full[1, 3:], atol=1e-4, rtol=1e-4)
    # The padded row equals the same tokens run alone: padding leaks nothing through the mixer.
    with torch.no_grad():
        alone = model(input_ids=ids[1:, 3:], attention_mask=mask[1:, 3:]).logits
    torch.testing.assert_close(full[1, 3:], alone[0], atol=1e-4, rtol=1e-4)

    # Perturbing token j during incremental decoding changes nothing before j.
    j = 6
    changed = ids.clone()
    changed[:, j] = (ids[:, j] + 7) % 500
    steps_changed = step_by_step_logits(model, changed, mask)
    assert torch.equal(steps_changed[:, :j], steps[:, :j])
    assert (steps_changed[:, j] - steps[:, j]).abs().max() > 1e-4


def test_generate_with_cache_equals_generate_without(tiny_qwen3_vl_path):
    model = mot_model(load_tiny_vl(tiny_qwen3_vl_path))
    torch.manual_seed(1)
    ids = torch.randint(0, 500, (2, 7))
    mask = torch.ones_like(ids)
    mask[0, :2] = 0
    kwargs = dict(max_new_tokens=6, do_sample=False, output_scores=True, return_dict_in_generate=True)
    cached = model.generate(input_ids=ids, attention_mask=mask, use_cache=True, **kwargs)
    uncached = model.generate(input_ids=ids, attention_mask=mask, use_cache=False, **kwargs)
    assert torch.equal(cached.sequences, uncached.sequences)
    for a, b in zip(cached.scores, uncached.scores, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    # A second generate call starts a new prompt: the mixer's buffers are reset, results repeat.
    again = model.generate(input_ids=ids, attention_mask=mask, use_cache=True, **kwargs)
    assert torch.equal(again.sequences, cached.sequences)


def test_the_hook_finds_the_cache_under_either_name():
    from localqwen.adapters.mot_lora.model import passed_cache

    cache = object()
    # generate passes it as ``cache`` from transformers 5.24 on (then the MoT layers saw no cache and
    # mixed every decoding step as a new sequence), as ``past_key_values`` before.
    assert passed_cache({"cache": cache}) is cache and passed_cache({"past_key_values": cache}) is cache
    assert passed_cache({"past_key_values": None, "cache": cache}) is cache and passed_cache({}) is None
