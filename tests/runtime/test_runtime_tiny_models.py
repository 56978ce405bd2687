"""The tiny models load with the real transformers classes and behave like Qwen's."""

from __future__ import annotations

import json

import pytest

from localqwen.testing.tiny_models import MARKUP_TOKENS, SPECIAL_TOKENS, build_tiny_qwen3

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def test_tiny_qwen3_loads_and_generates(tiny_qwen3_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen3_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert (tiny_qwen3_path / "model.safetensors").exists()
    assert not list(tiny_qwen3_path.glob("*.bin"))
    for token in SPECIAL_TOKENS + MARKUP_TOKENS:
        ids = tokenizer(token, add_special_tokens=False).input_ids
        assert len(ids) == 1, token
    assert tokenizer.eos_token == "<|im_end|>"
    # Markup tokens survive decoding with skip_special_tokens so tool calls can be parsed.
    ids = tokenizer('<tool_call>\n{"name": "x"}\n</tool_call><|im_end|>').input_ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == '<tool_call>\n{"name": "x"}\n</tool_call>'
    inputs = tokenizer("Describe the image.", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=5, do_sample=False)
    assert out.shape[1] == inputs.input_ids.shape[1] + 5


def test_chat_template_renders_tools_and_tool_calls_like_qwen(tiny_qwen3_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen3_path)
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "name": "get_weather", "content": "21 C"},
    ]
    text = tokenizer.apply_chat_template(messages, tools=TOOLS, add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n")
    assert json.dumps(TOOLS[0]) in text
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>' in text
    assert "<|im_start|>user\n<tool_response>\n21 C\n</tool_response><|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")
    no_think = tokenizer.apply_chat_template(
        messages[:2], add_generation_prompt=True, tokenize=False, enable_thinking=False
    )
    assert no_think.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_tiny_qwen3_vl_processes_images_and_generates(tiny_qwen3_vl_path):
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_qwen3_vl_path)
    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_vl_path)
    assert type(model).__name__ == "Qwen3VLForConditionalGeneration"
    image = Image.new("RGB", (300, 200), (200, 30, 30))
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Describe."}]}]
    inputs = processor.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
    )
    rendered = processor.decode(inputs["input_ids"][0])
    assert "<|vision_start|><|image_pad|>" in rendered and "<|vision_end|>Describe.<|im_end|>" in rendered
    # Large images shrink to at most 64x64 pixels: a few vision tokens only.
    t, h, w = inputs["image_grid_thw"][0].tolist()
    assert t == 1 and h * w * 16 * 16 <= 64 * 64
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    assert out.shape[1] == inputs["input_ids"].shape[1] + 4


def test_overrides_change_sizes(tmp_path):
    from transformers import AutoConfig

    path = build_tiny_qwen3(tmp_path / "m", hidden_size=32, num_hidden_layers=1, vocab_size=400, seed=3)
    config = AutoConfig.from_pretrained(path)
    assert (config.hidden_size, config.num_hidden_layers) == (32, 1)
    assert config.vocab_size < 600


def test_vl_overrides_reach_text_and_vision(tmp_path):
    from transformers import AutoConfig

    from localqwen.testing.tiny_models import build_tiny_qwen3_vl

    path = build_tiny_qwen3_vl(
        tmp_path / "vl", hidden_size=48, num_hidden_layers=3, image_size=128, vision_config={"depth": 1}
    )
    config = AutoConfig.from_pretrained(path)
    assert config.text_config.hidden_size == 48 and config.text_config.num_hidden_layers == 3
    assert config.vision_config.depth == 1 and config.vision_config.out_hidden_size == 48
    processor_config = json.loads((path / "processor_config.json").read_text())
    assert processor_config["image_processor"]["size"]["longest_edge"] == 128 * 128
    with pytest.raises(ValueError, match="multiple of 32"):
        build_tiny_qwen3_vl(tmp_path / "bad", image_size=50)
