"""Every method x base layer kind: injected classes, zero-init identity, gradients, counts, save/load."""

from __future__ import annotations

import bitsandbytes  # noqa: E402,F401 - in the test extra; CPU 4-bit works with it
import pytest
import torch
from adapter_models import TINY_LAYERS, TINY_TARGETS, load_tiny_vl, randomize_adapters, tiny_net

from localqwen.adapters import METHODS, AdapterError, apply_adapter, load_adapter, save_adapter

KINDS = ["linear", "linear4bit"]
OPTIONS = {
    "lora": {"r": 4},
    "qlora": {"r": 4},
    "dora": {"r": 4},
    "ia3": {},
    "moe-lora": {"r": 4, "num_experts": 4, "top_k": 2},
    "mot-lora": {"r": 4, "kernel_size": 3},
}


def formula(method: str, layers: list[tuple[str, int, int]]) -> int:
    """Trainable parameters written out per method (r=4, E=4, K=3)."""
    r, experts, kernel = 4, 4, 3
    total = 0
    for name, fan_in, fan_out in layers:
        if method in ("lora", "qlora"):
            total += r * (fan_in + fan_out)
        elif method == "dora":
            total += r * (fan_in + fan_out) + fan_out
        elif method == "ia3":
            total += fan_in if name.endswith("down_proj") else fan_out
        elif method == "moe-lora":
            total += experts * r * (fan_in + fan_out) + experts * fan_in
        elif method == "mot-lora":
            total += r * (fan_in + fan_out) + r * kernel
    return total


def expected_layer_class(method: str, kind: str) -> str:
    own = {"moe-lora": "MoELoRALinear", "mot-lora": "MoTLoRALinear"}
    if method in own:
        return own[method]
    package = "ia3" if method == "ia3" else "lora"
    return f"peft.tuners.{package}.bnb.Linear4bit" if kind == "linear4bit" else f"peft.tuners.{package}.layer.Linear"


def assert_injected(model, names: list[str], method: str, kind: str) -> None:
    modules = dict(model.named_modules())
    expected = expected_layer_class(method, kind)
    for name in names:
        layer = next(m for full, m in modules.items() if full == name or full.endswith("." + name))
        found = type(layer).__name__ if "." not in expected else f"{type(layer).__module__}.{type(layer).__name__}"
        assert found == expected, f"{name}: {found} != {expected}"
        base_type = type(layer.base_layer).__name__
        assert base_type == ("Linear4bit" if kind == "linear4bit" else "Linear"), base_type


def check_gradients(model, loss) -> None:
    loss.backward()
    adapter_tags = ("lora_", "ia3_", "router", "mixer")
    with_grad = [n for n, p in model.named_parameters() if p.grad is not None]
    assert with_grad, "no parameter received a gradient"
    assert all(any(tag in n for tag in adapter_tags) for n in with_grad), with_grad
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert set(trainable) == set(with_grad)
    assert any(p.grad.abs().sum() > 0 for _, p in model.named_parameters() if p.grad is not None)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", METHODS)
def test_tiny_module_matrix(method, kind, tmp_path):
    torch.manual_seed(0)
    ids = torch.randint(0, 32, (2, 7))
    base = tiny_net(kind)
    with torch.no_grad():
        reference = base(ids)
    if method == "qlora" and kind == "linear":
        with pytest.raises(AdapterError, match="4-bit"):
            apply_adapter(base, method, {**OPTIONS[method], "target_modules": TINY_TARGETS})
        return
    info = apply_adapter(base, method, {**OPTIONS[method], "target_modules": TINY_TARGETS})
    model = info.model
    assert_injected(model, TINY_TARGETS, method, kind)
    assert info.trainable_params == formula(method, TINY_LAYERS)
    model.train()
    out = model(ids)
    assert out.shape == reference.shape == (2, 7, 32)
    torch.testing.assert_close(out, reference, atol=1e-5, rtol=0)  # fresh adapter == base model
    check_gradients(model, out.square().mean())

    randomize_adapters(model)
    model.eval()
    with torch.no_grad():
        adapted = model(ids)
    assert (adapted - reference).abs().max() > 1e-3  # the adapter does change the model
    save_adapter(model, tmp_path / "adapter")
    reloaded = load_adapter(tiny_net(kind), tmp_path / "adapter")
    with torch.no_grad():
        torch.testing.assert_close(reloaded(ids), adapted, atol=0, rtol=0)


VL_TEXT_LAYERS = [  # tiny Qwen3-VL text decoder: hidden 64, 4 heads x 16, 2 kv heads, 2 layers
    (name, fan_in, fan_out)
    for _ in range(2)
    for name, fan_in, fan_out in [("q_proj", 64, 64), ("k_proj", 64, 32), ("v_proj", 64, 32), ("o_proj", 64, 64)]
]


VL_CASES = [(m, m == "qlora") for m in METHODS] + [("moe-lora", True), ("mot-lora", True)]


@pytest.mark.parametrize(("method", "four_bit"), VL_CASES, ids=[f"{m}{'-4bit' * b}" for m, b in VL_CASES])
def test_tiny_qwen3_vl_matrix(method, four_bit, tiny_qwen3_vl_path, tmp_path):
    torch.manual_seed(0)
    ids = torch.randint(0, 500, (2, 8))
    mask = torch.ones_like(ids)
    base = load_tiny_vl(tiny_qwen3_vl_path, four_bit=four_bit)
    with torch.no_grad():
        reference = base(input_ids=ids, attention_mask=mask).logits
    info = apply_adapter(base, method, OPTIONS[method])
    model = info.model
    assert_injected(model, ["language_model.layers.0.self_attn.q_proj", "language_model.layers.1.mlp.down_proj"][:1],
                    method, "linear4bit" if four_bit else "linear")
    assert not any("visual" in n for n, p in model.named_parameters() if p.requires_grad)
    assert info.trainable_params == formula(method, VL_TEXT_LAYERS)
    model.train()
    out = model(input_ids=ids, attention_mask=mask, labels=ids)
    torch.testing.assert_close(out.logits, reference, atol=1e-5, rtol=0)
    check_gradients(model, out.loss)

    randomize_adapters(model, scale=0.05)
    model.eval()
    with torch.no_grad():
        adapted = model(input_ids=ids, attention_mask=mask).logits
    generated = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=4, do_sample=False)
    assert generated.shape == (2, 12)
    save_adapter(model, tmp_path / "adapter")
    reloaded = load_adapter(load_tiny_vl(tiny_qwen3_vl_path, four_bit=four_bit), tmp_path / "adapter")
    with torch.no_grad():
        torch.testing.assert_close(reloaded(input_ids=ids, attention_mask=mask).logits, adapted, atol=1e-6, rtol=0)
    assert torch.equal(reloaded.generate(input_ids=ids, attention_mask=mask, max_new_tokens=4, do_sample=False), generated)


@pytest.mark.parametrize("method", ["lora", "dora", "ia3", "moe-lora", "mot-lora"])
def test_shape_formula_matches_the_injected_model(method, tiny_qwen3_vl_path):
    from localqwen.adapters.param_counts import qwen3_text_layers, trainable_params

    options = {} if method == "ia3" else {"r": 2, "include_mlp": True}
    info = apply_adapter(load_tiny_vl(tiny_qwen3_vl_path), method, options)
    shapes = qwen3_text_layers(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, intermediate=128,
                               mlp=method != "ia3")
    assert info.trainable_params == trainable_params(method, shapes, options)


@pytest.mark.parametrize("method", ["moe-lora", "mot-lora"])
def test_bf16_base_keeps_its_dtype_and_float32_adapters(method):
    ids = torch.randint(0, 32, (2, 6))
    base = tiny_net("linear").to(torch.bfloat16)
    with torch.no_grad():
        reference = base(ids)
    model = apply_adapter(base, method, {"target_modules": TINY_TARGETS}).model
    assert all(p.dtype == torch.float32 for p in model.parameters() if p.requires_grad)
    out = model(ids)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, reference, atol=0, rtol=0)
    out.float().square().mean().backward()
    assert model.q_proj.lora_B.grad is not None and model.q_proj.lora_B.grad.dtype == torch.float32


def test_mot_kernel_size_one_is_plain_lora():
    ids = torch.randint(0, 32, (2, 6))
    mot = apply_adapter(tiny_net("linear"), "mot-lora", {"kernel_size": 1, "target_modules": TINY_TARGETS}).model
    lora = apply_adapter(tiny_net("linear"), "lora", {"target_modules": TINY_TARGETS}).model
    with torch.no_grad():
        for name in TINY_TARGETS:  # same low-rank weights in both
            peft_layer = lora.base_model.model.get_submodule(name)
            getattr(mot, name).lora_A.copy_(peft_layer.lora_A["default"].weight)
            getattr(mot, name).lora_B.normal_()
            peft_layer.lora_B["default"].weight.copy_(getattr(mot, name).lora_B)
        torch.testing.assert_close(mot(ids), lora(ids), atol=1e-6, rtol=1e-6)
