"""After training: held-out scoring, merging a LoRA into safetensors, GGUF conversion errors."""

from __future__ import annotations

import json
import math

import pytest
import torch

from localqwen.training import after


def test_exact_match_and_metrics_chosen_from_the_given_mapping():
    assert after.exact_match(["A red circle ", "x"], ["a red circle", "y"]) == {"exact_match": 0.5}
    metrics = after.builtin_metrics()
    assert after.get_metric(metrics, "none") is None
    with pytest.raises(KeyError, match="unknown metric 'bleu'.*exact_match"):
        after.get_metric(metrics, "bleu")

    def length_ratio(predictions, references):
        return {"length_ratio": sum(map(len, predictions)) / sum(map(len, references))}

    # A plugin's metric is one more entry of the mapping its caller passes (Extensions.metrics in the app).
    metrics["length-ratio"] = length_ratio
    assert after.get_metric(metrics, "length-ratio")(["ab"], ["abcd"]) == {"length_ratio": 0.5}
    assert "length-ratio" not in after.builtin_metrics()  # a fresh dict each time: nothing global


def test_merged_lora_gives_the_same_outputs_as_the_adapter(tmp_path, tiny_qwen3_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)
    tuned = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    tuned.save_pretrained(tmp_path / "adapter")
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    with torch.no_grad():
        expected = tuned(input_ids=ids).logits
        plain = AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)(input_ids=ids).logits
    assert not torch.allclose(expected, plain, atol=1e-4)  # the adapter changes the model

    merged_dir = after.merge_lora(tiny_qwen3_path, tmp_path / "adapter", tmp_path / "merged")
    assert (merged_dir / "model.safetensors").exists() and not (merged_dir / "adapter_config.json").exists()
    merged = AutoModelForCausalLM.from_pretrained(merged_dir)
    with torch.no_grad():
        assert torch.allclose(merged(input_ids=ids).logits, expected, atol=1e-4)


def test_heldout_scores_and_preferences_on_a_real_model(tiny_qwen3_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen3_path)
    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]}]
    result = after.evaluate(model, tokenizer, rows, max_new_tokens=3)
    assert math.isfinite(result.loss) and result.loss > 0
    assert len(result.predictions) == 1 and result.references == ["hello there"]
    pair = {"prompt": [{"role": "user", "content": "hi"}], "chosen": "hello", "rejected": "hello there friend"}
    chosen = after.sequence_logprob(model, tokenizer, pair["prompt"], "hello")
    longer = after.sequence_logprob(model, tokenizer, pair["prompt"], "hello there friend")
    assert longer < chosen < 0  # more random tokens, less likely
    assert after.preference_accuracy(model, tokenizer, [pair]) == 1.0


def test_gguf_conversion_says_what_is_wrong(tmp_path, tiny_qwen3_path, monkeypatch):
    # LLAMA_CPP_DIR still overrides the converter unpacked from llama-cpp-python; a wrong one is named.
    monkeypatch.setenv("LLAMA_CPP_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="LLAMA_CPP_DIR=.* has no convert_hf_to_gguf.py.*unset it"):
        after.export_gguf(tiny_qwen3_path, tmp_path / "x.gguf")
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"architectures": ["FancyNewModel"]}))
    with pytest.raises(RuntimeError, match="does not support \\['FancyNewModel'\\]"):
        after.export_gguf(other, tmp_path / "y.gguf")
