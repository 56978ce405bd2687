"""The Qwen chat collator: assistant-only labels, images through the processor, length, packing."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from localqwen.training.collator import IGNORE_INDEX, ChatCollator

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def tokenizer(tiny_qwen3_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_qwen3_path)


@pytest.fixture(scope="module")
def processor(tiny_qwen3_vl_path):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_qwen3_vl_path)


def _learned_text(batch, tokenizer, row=0):
    labels = batch["labels"][row]
    return tokenizer.decode(labels[labels != IGNORE_INDEX])


def test_only_assistant_turns_are_learned_in_a_multi_turn_tool_conversation(tokenizer):
    row = {
        "tools": TOOLS,
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
            {"role": "tool", "name": "get_weather", "content": "21 degrees"},
            {"role": "assistant", "content": "It is 21 degrees."},
        ],
    }
    batch = ChatCollator(tokenizer)([row, {"messages": row["messages"][:2] + [{"role": "assistant", "content": "Hi"}]}])
    learned = _learned_text(batch, tokenizer)
    assert '<tool_call>' in learned and '"city": "Paris"' in learned
    assert "It is 21 degrees.<|im_end|>" in learned
    for unseen in ("You are helpful", "Weather in Paris", "21 degrees<", "get_weather\", \"description"):
        assert unseen not in learned
    # Padding of the shorter row is never learned.
    assert batch["attention_mask"][1].sum() < batch["attention_mask"].shape[1]
    assert (batch["labels"][1][batch["attention_mask"][1] == 0] == IGNORE_INDEX).all()
    assert _learned_text(batch, tokenizer, 1) == "Hi<|im_end|>"


def test_images_go_through_the_processor(processor, tmp_path):
    path = tmp_path / "red.png"
    Image.new("RGB", (64, 64), "red").save(path)
    rows = [
        {"messages": [{"role": "user", "content": [{"type": "image", "image": str(path)}, {"type": "text", "text": "Color?"}]},
                      {"role": "assistant", "content": "red"}]},
        {"messages": [{"role": "user", "content": "No image here"}, {"role": "assistant", "content": "ok"}]},
    ]
    collator = ChatCollator(processor)
    batch = collator(rows)
    image_pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    merge = processor.image_processor.merge_size
    assert int((batch["input_ids"] == image_pad).sum()) == int(batch["image_grid_thw"].prod(-1).sum()) // merge**2
    assert batch["pixel_values"].shape[0] == int(batch["image_grid_thw"].prod(-1).sum())
    assert _learned_text(batch, processor.tokenizer) == "red<|im_end|>"
    assert (batch["labels"][batch["input_ids"] == image_pad] == IGNORE_INDEX).all()


def test_counting_a_rows_tokens_reads_only_image_headers_and_matches_the_full_encoding(processor, tmp_path):
    """count_tokens takes the image tokens per image size from one blank image of that size; it must
    count exactly what the processor makes of the row (sizes that resize, two images, text first,
    tools, an image given as a dict, a text-only row, and a missing image, which is encoded in full
    and so fails as it would in training)."""
    paths = {}
    for name, size in (("small", (64, 64)), ("view", (160, 160)), ("wide", (200, 90))):
        paths[name] = tmp_path / f"{name}.png"
        Image.new("RGB", size, "green").save(paths[name])

    def image(name):
        return {"type": "image", "image": str(paths[name])}

    rows = [
        {"messages": [{"role": "user", "content": [image("view"), {"type": "text", "text": "Where now?"}]},
                      {"role": "assistant", "content": "left"}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "Where is the lion?"}, image("wide")]},
                      {"role": "assistant", "content": "No lion in view."}]},
        {"messages": [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": [image("small"), image("view"), {"type": "text", "text": "Same?"}]},
                      {"role": "assistant", "content": "no"}], "tools": TOOLS},
        {"messages": [{"role": "user", "content": [{"type": "image", "image": {"path": str(paths["wide"])}},
                                                   {"type": "text", "text": "Colour?"}]},
                      {"role": "assistant", "content": "green"}]},
        {"messages": [{"role": "user", "content": "No image here"}, {"role": "assistant", "content": "ok"}]},
    ]
    collator = ChatCollator(processor)
    for row in rows:
        assert collator.count_tokens(row) == int(collator._encode([row])["input_ids"].shape[1])
    assert set(collator._image_token_counts) == {(64, 64), (160, 160), (200, 90)}
    missing = {"messages": [{"role": "user", "content": [{"type": "image", "image": str(tmp_path / "gone.png")}]},
                            {"role": "assistant", "content": "?"}]}
    with pytest.raises(FileNotFoundError):
        collator.count_tokens(missing)


def test_max_length_cuts_text_but_never_image_tokens(processor, tmp_path):
    path = tmp_path / "img.png"
    Image.new("RGB", (64, 64), "blue").save(path)
    with_image = {"messages": [{"role": "user", "content": [{"type": "image", "image": str(path)}, {"type": "text", "text": "x " * 40}]},
                               {"role": "assistant", "content": "blue"}]}
    with pytest.raises(ValueError, match="over max_length 16.*image tokens"):
        ChatCollator(processor, max_length=16)([with_image])
    text_only = {"messages": [{"role": "user", "content": "y " * 40}, {"role": "assistant", "content": "ok"}]}
    assert ChatCollator(processor, max_length=16)([text_only])["input_ids"].shape[1] == 16


def test_packing_gives_the_same_loss_as_padding(tiny_qwen3_path, tokenizer):
    """Packed rows restart their position ids, so attention never crosses rows: same loss as padding."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_qwen3_path, attn_implementation="sdpa").eval()
    rows = [{"messages": [{"role": "user", "content": f"Question number {i}" + " more" * i},
                          {"role": "assistant", "content": f"Answer {i}" + " yes" * (3 - i % 3)}]} for i in range(6)]
    padded = ChatCollator(tokenizer, max_length=256)(rows)
    packed = ChatCollator(tokenizer, max_length=256, pack=True)(rows)
    assert packed["input_ids"].shape[0] < padded["input_ids"].shape[0]
    assert int((packed["labels"] != IGNORE_INDEX).sum()) == int((padded["labels"] != IGNORE_INDEX).sum())

    def summed_loss(batch):
        labels = batch.pop("labels")
        with torch.no_grad():
            logits = model(**batch, use_cache=False).logits[:, :-1]  # as in training (a cache disables packing)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                                 ignore_index=IGNORE_INDEX, reduction="sum")

    assert torch.allclose(summed_loss(dict(padded)), summed_loss(dict(packed)), rtol=1e-4)
