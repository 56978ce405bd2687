"""Registry errors, refusing mismatched checkpoints, vision targets and gradient checkpointing."""

from __future__ import annotations

import json

import pytest
import torch
from adapter_models import TINY_TARGETS, load_tiny_vl, randomize_adapters, tiny_net

from localqwen.adapters import (
    AdapterError,
    AdapterLoadError,
    adapter_method,
    apply_adapter,
    load_adapter,
    save_adapter,
)
from localqwen.adapters.router_metrics import collect_router_metrics, router_callback


def test_bad_method_and_options_are_clear_errors():
    with pytest.raises(AdapterError, match="unknown adapter method 'loraa'"):
        apply_adapter(tiny_net("linear"), "loraa")
    with pytest.raises(AdapterError, match=r"unknown option\(s\) \['experts'\]"):
        apply_adapter(tiny_net("linear"), "moe-lora", {"experts": 4, "target_modules": TINY_TARGETS})
    with pytest.raises(AdapterError, match="top_k must be between 1 and num_experts"):
        apply_adapter(tiny_net("linear"), "moe-lora", {"top_k": 5, "target_modules": TINY_TARGETS})
    with pytest.raises(AdapterError, match="balance='bias' needs top_k >= 2"):
        apply_adapter(tiny_net("linear"), "moe-lora", {"top_k": 1, "balance": "bias", "target_modules": TINY_TARGETS})
    with pytest.raises(AdapterError, match="no linear layer matches"):
        apply_adapter(tiny_net("linear"), "mot-lora", {"target_modules": ["nope"]})


@pytest.mark.parametrize("method", ["moe-lora", "mot-lora", "lora", "ia3"])
def test_mismatched_checkpoint_is_refused_and_model_untouched(method, tmp_path):
    # Saved for r=4 on q_proj/v_proj of a 16-wide net; loaded into one whose q_proj is 12 wide.
    options = {} if method == "ia3" else {"r": 4}
    model = apply_adapter(tiny_net("linear"), method, {**options, "target_modules": TINY_TARGETS}).model
    save_adapter(model, tmp_path / "a")
    other = tiny_net("linear")
    other.q_proj = torch.nn.Linear(16, 12)
    other.v_proj = torch.nn.Linear(12, 16, bias=False)
    before = {n: type(m) for n, m in other.named_modules()}
    with pytest.raises(AdapterLoadError, match="does not match this model"):
        load_adapter(other, tmp_path / "a")
    assert {n: type(m) for n, m in other.named_modules()} == before
    assert adapter_method(other) is None


def test_broken_folders_are_clear_errors(tmp_path):
    with pytest.raises(AdapterLoadError, match="does not exist"):
        load_adapter(tiny_net("linear"), tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterLoadError, match="holds no adapter"):
        load_adapter(tiny_net("linear"), tmp_path / "empty")
    model = apply_adapter(tiny_net("linear"), "mot-lora", {"target_modules": TINY_TARGETS}).model
    save_adapter(model, tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "localqwen_adapter.json").read_text())
    meta["config"]["kernel_size"] = 0
    (tmp_path / "a" / "localqwen_adapter.json").write_text(json.dumps(meta))
    with pytest.raises(AdapterLoadError, match="kernel_size"):
        load_adapter(tiny_net("linear"), tmp_path / "a")
    (tmp_path / "a" / "adapter_model.safetensors").write_bytes(b"not safetensors")
    meta["config"]["kernel_size"] = 4
    (tmp_path / "a" / "localqwen_adapter.json").write_text(json.dumps(meta))
    with pytest.raises(AdapterLoadError, match="not a readable safetensors"):
        load_adapter(tiny_net("linear"), tmp_path / "a")


def test_vision_tower_only_when_asked(tiny_qwen3_vl_path):
    text_only = apply_adapter(load_tiny_vl(tiny_qwen3_vl_path), "moe-lora", {"target_modules": ["qkv", "q_proj"]}).model
    assert not any("visual" in n for n, p in text_only.named_parameters() if p.requires_grad)
    with_vision = apply_adapter(
        load_tiny_vl(tiny_qwen3_vl_path), "mot-lora", {"target_modules": ["qkv", "q_proj"], "include_vision": True}
    ).model
    assert type(with_vision.model.visual.blocks[0].attn.qkv).__name__ == "MoTLoRALinear"
    # Vision patches arrive as (patches, features): the mixer is skipped, the LoRA path still runs.
    patches = torch.randn(16, with_vision.model.visual.blocks[0].attn.qkv.in_features)
    assert with_vision.model.visual.blocks[0].attn.qkv(patches).shape[0] == 16


@pytest.mark.parametrize("method", ["moe-lora", "mot-lora", "dora"])
def test_trains_under_gradient_checkpointing(method, tiny_qwen3_vl_path):
    model = load_tiny_vl(tiny_qwen3_vl_path)
    info = apply_adapter(model, method, {"r": 4, "gradient_checkpointing": True})
    model = info.model.train()
    assert model.is_gradient_checkpointing if hasattr(model, "is_gradient_checkpointing") else True
    randomize_adapters(model, scale=0.05)
    ids = torch.randint(0, 500, (2, 8))
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
    callback = router_callback()
    losses = []
    for _ in range(3):
        loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss
        optimizer.zero_grad()
        loss.backward()
        assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
        optimizer.step()
        callback.on_step_end(None, None, None, model=model)
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]
    if method == "moe-lora":
        metrics = collect_router_metrics(model)
        assert metrics["moe/aux_loss"] > 0 and 0 < metrics["moe/load_entropy"] <= 1
        logs = {}
        callback.on_log(None, None, None, logs=logs)
        assert "moe/load_entropy" in logs
