"""Tiny Qwen3 and Qwen3-VL models with random weights, built into a folder in seconds.

They use the real transformers classes, a byte-level BPE tokenizer trained here on a small
built-in corpus (same pipeline as Qwen's tokenizer, with Qwen's special tokens) and a chat
template that renders images, tools and tool calls like Qwen's. Tests, benchmarks and the
offline demo (`localqwen dev tiny-model`) use them.

Sizes can be changed through keyword overrides, e.g. for training one from scratch::

    build_tiny_qwen3_vl(out, hidden_size=128, num_hidden_layers=4, image_size=128,
                        vision_config={"depth": 2, "hidden_size": 64})

Reserved override keys (not model config): ``vocab_size`` (tokenizer size to train),
``seed`` (weights), ``corpus`` (extra text for the tokenizer) and, for VL, ``image_size``
(largest image side the processor keeps, in pixels; a multiple of 32).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CHAT_TEMPLATE_FILE = Path(__file__).with_name("qwen_chat_template.jinja")

# Qwen's special tokens in Qwen's order (ids follow, starting right after the trained vocab).
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
# Not "special" in Qwen's tokenizer (they stay in decoded text so tool calls can be parsed).
MARKUP_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]

DEFAULT_VOCAB_SIZE = 1024

_CORPUS = """
You are a helpful assistant. The user asks a question and the assistant answers it clearly.
Describe the image. The image shows a red circle on a white background. A blue square is next
to a green triangle. There is a yellow star above a black line. The picture contains two small
orange dots and one large purple rectangle in the top left corner, bottom right, center.
What is the weather in Paris today? Let me call the weather tool. The temperature is 21 degrees.
Search the knowledge base for the answer and cite the source document and page number.
The patient report mentions a fever of 38.5 C, a cough, and a normal chest x-ray. Summarise it.
def add(a, b):\n    return a + b\nprint(add(1, 2))\nfor i in range(10):\n    x = i * 2
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
{"type": "function", "function": {"name": "search", "description": "Search documents",
"parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}
# Tools\n\nYou may call one or more functions to assist with the user query.
For each function call, return a json object with function name and arguments.
Click the button at (120, 45). Type hello into the search box. Scroll down. The task is done.
Memory: the user's name is Alice, she likes green tea and lives in Hangzhou.
请描述这张图片。图片中有一个红色的圆形和一个蓝色的正方形。你好，我是一个有帮助的助手。
今天天气很好。我们去公园散步吧。这份病历记录了发热、咳嗽和胸部检查结果。
이 사진을 설명해 주세요. 빨간 원과 파란 사각형이 있습니다. 안녕하세요, 무엇을 도와드릴까요?
0 1 2 3 4 5 6 7 8 9 10 100 1000 3.14 2024-05-01 12:30 yes no true false null
"""


def default_corpus() -> list[str]:
    lines = [line for line in _CORPUS.strip().splitlines() if line.strip()]
    # Repeat so frequent pairs are clearly frequent; the trainer is fast either way.
    return lines * 4


def build_tokenizer(path: Path, *, vocab_size: int = DEFAULT_VOCAB_SIZE, corpus: list[str] | None = None):
    """Train a byte-level BPE tokenizer (Qwen's pipeline) and save it into ``path``.

    Returns the loaded transformers tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=max(vocab_size, 300),
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(default_corpus() + list(corpus or []), trainer=trainer)
    model_state = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model_state["merges"]]
    qwen = Qwen2Tokenizer(
        vocab=model_state["vocab"],
        merges=merges,
        unk_token=None,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        errors="replace",
        model_max_length=32768,
    )
    from tokenizers import AddedToken

    qwen.add_special_tokens(
        {"additional_special_tokens": SPECIAL_TOKENS},
        replace_extra_special_tokens=False,
    )
    qwen.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    qwen.chat_template = CHAT_TEMPLATE_FILE.read_text(encoding="utf-8")
    qwen.save_pretrained(path)
    return qwen


def _split_reserved(overrides: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: overrides.pop(key) for key in keys if key in overrides}


def _text_defaults(vocab_size: int, tokenizer) -> dict[str, Any]:
    return {
        "vocab_size": vocab_size,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
        "pad_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "bos_token_id": None,
    }


def _padded_vocab(tokenizer) -> int:
    # Round up like Qwen does (their embedding matrix is larger than the tokenizer).
    return ((len(tokenizer) + 63) // 64) * 64


def _write_generation_config(path: Path, tokenizer) -> None:
    from transformers import GenerationConfig

    GenerationConfig(
        eos_token_id=[tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")],
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        do_sample=False,
    ).save_pretrained(path)


def build_tiny_qwen3(path: str | Path, **config_overrides: Any) -> Path:
    """Write a tiny random-weight Qwen3 causal LM (safetensors) with tokenizer into ``path``."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    overrides = dict(config_overrides)
    reserved = _split_reserved(overrides, ("vocab_size", "seed", "corpus"))
    tokenizer = build_tokenizer(
        path, vocab_size=reserved.get("vocab_size", DEFAULT_VOCAB_SIZE), corpus=reserved.get("corpus")
    )
    settings = _text_defaults(_padded_vocab(tokenizer), tokenizer)
    settings.update(overrides)
    config = Qwen3Config(**settings)
    config.architectures = ["Qwen3ForCausalLM"]
    torch.manual_seed(reserved.get("seed", 0))
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(path, safe_serialization=True)
    _write_generation_config(path, tokenizer)
    return path


def build_tiny_qwen3_vl(path: str | Path, **config_overrides: Any) -> Path:
    """Write a tiny random-weight Qwen3-VL (image-text-to-text) with processor into ``path``."""
    import torch
    from transformers import AutoModelForImageTextToText, Qwen3VLConfig
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    overrides = dict(config_overrides)
    reserved = _split_reserved(overrides, ("vocab_size", "seed", "corpus", "image_size"))
    tokenizer = build_tokenizer(
        path, vocab_size=reserved.get("vocab_size", DEFAULT_VOCAB_SIZE), corpus=reserved.get("corpus")
    )
    image_size = int(reserved.get("image_size", 64))
    if image_size % 32:
        raise ValueError(f"image_size must be a multiple of 32 (patch 16 x merge 2), got {image_size}")

    vision_overrides = overrides.pop("vision_config", {}) or {}
    text_overrides = overrides.pop("text_config", {}) or {}
    # Plain keys (hidden_size, num_hidden_layers, ...) describe the text decoder unless they are
    # top-level Qwen3VLConfig fields.
    top_level = {"image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id", "tie_word_embeddings"}
    top_overrides = {k: v for k, v in overrides.items() if k in top_level}
    text_overrides = {**{k: v for k, v in overrides.items() if k not in top_level}, **text_overrides}

    text = _text_defaults(_padded_vocab(tokenizer), tokenizer)
    text.pop("tie_word_embeddings")
    text.update(text_overrides)
    half_rotary = text["head_dim"] // 2
    # Qwen3-VL splits the rotary dims between time, height and width (interleaved M-RoPE).
    third = half_rotary // 3
    text.setdefault(
        "rope_parameters",
        {
            "rope_type": "default",
            "rope_theta": 5_000_000.0,
            "mrope_section": [half_rotary - 2 * third, third, third],
            "mrope_interleaved": True,
        },
    )
    depth = vision_overrides.get("depth", 2)
    vision = {
        "depth": depth,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "out_hidden_size": text["hidden_size"],
        "num_position_embeddings": 256,
        "deepstack_visual_indexes": list(range(min(depth, text["num_hidden_layers"]) - 1)) or [0],
    }
    vision.update(vision_overrides)
    ids = {
        "image_token_id": tokenizer.convert_tokens_to_ids("<|image_pad|>"),
        "video_token_id": tokenizer.convert_tokens_to_ids("<|video_pad|>"),
        "vision_start_token_id": tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        "vision_end_token_id": tokenizer.convert_tokens_to_ids("<|vision_end|>"),
        "tie_word_embeddings": True,
    }
    ids.update(top_overrides)
    config = Qwen3VLConfig(text_config=text, vision_config=vision, **ids)
    config.architectures = ["Qwen3VLForConditionalGeneration"]
    torch.manual_seed(reserved.get("seed", 0))
    model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32)
    model.save_pretrained(path, safe_serialization=True)
    _write_generation_config(path, tokenizer)

    factor = vision["patch_size"] * vision["spatial_merge_size"]
    pixel_range = {"shortest_edge": factor * factor, "longest_edge": image_size * image_size}
    image_processor = Qwen2VLImageProcessor(
        size=pixel_range,
        patch_size=vision["patch_size"],
        temporal_patch_size=vision["temporal_patch_size"],
        merge_size=vision["spatial_merge_size"],
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    video_processor = Qwen3VLVideoProcessor(
        size={"shortest_edge": factor * factor, "longest_edge": image_size * image_size * 4},
        patch_size=vision["patch_size"],
        temporal_patch_size=vision["temporal_patch_size"],
        merge_size=vision["spatial_merge_size"],
    )
    processor = Qwen3VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=tokenizer.chat_template,
    )
    processor.save_pretrained(path)
    return path


def teach_reply(model_path: str | Path, out: str | Path, messages: list[dict[str, Any]], reply: str, *,
                tools: list[dict[str, Any]] | None = None, steps: int = 200, seed: int = 0) -> Path:
    """Overfit a tiny text model (seconds) so it answers ``messages`` (with ``tools``) with ``reply``.

    Gives tests a real model that really generates a given text, e.g. a Qwen tool call::

        teach_reply(tiny, out, [{"role": "user", "content": "Weather in Paris?"}],
                    '<tool_call>\\n{"name": "get_weather", "arguments": {"city": "Paris"}}\\n</tool_call>',
                    tools=[WEATHER_TOOL])
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").input_ids
    reply_ids = tokenizer(reply + "<|im_end|>", add_special_tokens=False, return_tensors="pt").input_ids
    ids = torch.cat([prompt_ids, reply_ids], dim=1)
    labels = ids.clone()
    labels[:, : prompt_ids.shape[1]] = -100  # learn the reply only
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if loss.item() < 0.01:
            break
    model.eval()
    out = Path(out)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    return out
