"""A QLoRA adapter runs on the base it was trained against: the engine loads that base in 4-bit NF4.

Found on a GPU machine (the safari bench's --qlora run): the engine loaded the base at the plan's
bf16 and the adapter was refused. Here the CPU's NF4 (bitsandbytes >= 0.48) runs the same path.
"""

from __future__ import annotations

import bitsandbytes  # noqa: F401 - in the test extra: CPU NF4 runs the path, never skipped
import torch

from localqwen.adapters import apply_adapter, save_adapter
from localqwen.adapters.peft_methods import is_4bit
from localqwen.adapters.registry import needs_4bit_base
from localqwen.runtime.engine.transformers_backend import TransformersEngine, four_bit_plan
from localqwen.runtime.plan import Plan


def _quantized_base(path):
    from transformers import AutoModelForImageTextToText

    from localqwen.adapters.peft_methods import keep_cpu_4bit_trainable
    from localqwen.runtime.quantization import nf4_config

    model = AutoModelForImageTextToText.from_pretrained(path, quantization_config=nf4_config("float32"),
                                                        device_map="cpu")
    keep_cpu_4bit_trainable(model)
    return model


def test_engine_loads_a_qlora_adapters_base_in_nf4_and_matches_the_trained_model(tiny_qwen3_vl_path, tmp_path):
    base = apply_adapter(_quantized_base(tiny_qwen3_vl_path), "qlora", {"r": 4, "alpha": 8}).model
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # an adapter that changes the outputs (LoRA's B starts at zero)
        for _, param in sorted(base.named_parameters()):
            if param.requires_grad:
                param.add_(torch.randn(param.shape, generator=generator) * 0.2)
    folder = save_adapter(base, tmp_path / "qlora")
    assert needs_4bit_base(folder)
    ids = torch.tensor([[5, 9, 17, 33, 2, 8]])
    base.eval()
    with torch.no_grad():
        trained = base(input_ids=ids).logits

    engine = TransformersEngine(tiny_qwen3_vl_path, adapter=folder)
    try:
        assert engine.plan is not None and engine.plan.quantization == "nf4"
        assert "QLoRA adapter" in engine.plan.reasons[-1]
        assert is_4bit(engine.model)
        with torch.no_grad():
            served = engine.model(input_ids=ids).logits
        torch.testing.assert_close(served, trained, rtol=1e-4, atol=1e-4)
        reply = engine.chat([{"role": "user", "content": "hi"}])
        assert reply.completion_tokens > 0
    finally:
        engine.close()


def test_plain_lora_folders_keep_the_plan(tiny_qwen3_vl_path, tmp_path):
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_vl_path, dtype=torch.float32)
    model = apply_adapter(model, "lora", {"r": 4}).model
    folder = save_adapter(model, tmp_path / "lora")
    assert not needs_4bit_base(folder)
    engine = TransformersEngine(tiny_qwen3_vl_path, adapter=folder)
    try:
        assert engine.plan is None and not is_4bit(engine.model)
    finally:
        engine.close()


def test_four_bit_plan_keeps_the_plans_other_choices():
    plan = Plan(model_id="m", task="vision", backend="transformers", device="cpu", dtype="float32",
                quantization=None, estimated_gb=1.5, available_gb=8.0, fits=True, reasons=["fits"])
    changed = four_bit_plan(plan, model_id="m", task="vision")
    assert (changed.quantization, changed.estimated_gb, changed.reasons[0]) == ("nf4", 1.5, "fits")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert changed.device == expected and changed.compute_dtype == changed.dtype
    fresh = four_bit_plan(None, model_id="m", task="text")
    assert (fresh.backend, fresh.quantization, fresh.task, fresh.device) == ("transformers", "nf4", "text", expected)
