"""llama.cpp with a vision projector: a real Qwen3-VL GGUF + mmproj (the tiny Qwen3-VL converted
by llama.cpp's own converter, see data/make_tiny_gguf.py) answering about an image."""

from __future__ import annotations

from pathlib import Path

import pytest

from localqwen.runtime.engine import GenerationSettings

DATA = Path(__file__).parent / "data"
MODEL = DATA / "tiny-qwen3vl-f32.gguf"


@pytest.fixture(scope="module")
def vision_engine():
    from localqwen.config import Config
    from localqwen.paths import app_paths
    from localqwen.services import Services

    services = Services(app_paths(), Config())
    resolved = services.models.resolve(str(MODEL))
    assert resolved.mmproj == (DATA / "mmproj-tiny-qwen3vl-f32.gguf").resolve()  # found next to the model
    engine = services.engine(str(MODEL), task="vision")
    yield engine
    services.device.evict()


def test_image_chat_streams_through_the_projector(vision_engine, tmp_path):
    from PIL import Image

    assert vision_engine.backend == "llama.cpp" and vision_engine.supports_images
    image = tmp_path / "red.png"
    Image.new("RGB", (64, 64), (230, 20, 20)).save(image)
    messages = [{"role": "user", "content": [{"type": "image", "image": str(image)}, {"type": "text", "text": "Describe."}]}]
    deltas = list(vision_engine.stream(messages, settings=GenerationSettings(max_new_tokens=6)))
    result = vision_engine.last_result
    assert "".join(deltas) == result.text and result.completion_tokens == 6
    text_only = vision_engine.chat([{"role": "user", "content": "Describe."}], settings=GenerationSettings(max_new_tokens=2))
    assert result.prompt_tokens > text_only.prompt_tokens  # the image became vision tokens


def test_image_chat_stops_and_cancels(vision_engine, tmp_path):
    from PIL import Image

    from localqwen.vocabulary.cancel import CancelToken

    image = tmp_path / "blue.png"
    Image.new("RGB", (64, 64), (20, 20, 230)).save(image)
    messages = [{"role": "user", "content": [{"type": "image", "image": str(image)}, {"type": "text", "text": "Describe."}]}]
    full = vision_engine.chat(messages, settings=GenerationSettings(max_new_tokens=8))
    assert full.completion_tokens == 8 and full.finish_reason == "length"
    stop = full.text[len(full.text) // 2:][:3]
    cut = vision_engine.chat(messages, settings=GenerationSettings(max_new_tokens=8, stop=[stop]))
    assert cut.finish_reason == "stop" and stop not in cut.text and full.text.startswith(cut.text)
    cancel = CancelToken()
    deltas = []
    for delta in vision_engine.stream(messages, settings=GenerationSettings(max_new_tokens=8), cancel=cancel):
        deltas.append(delta)
        cancel.cancel("enough")
    result = vision_engine.last_result
    assert result.finish_reason == "cancelled" and result.completion_tokens < 8 and "".join(deltas) == result.text


def test_qwen_chat_template_comes_from_the_gguf(vision_engine):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    prompt = vision_engine.render([{"role": "user", "content": "Hi"}], tools)
    assert vision_engine.llm.metadata.get("tokenizer.chat_template")
    assert "<tools>" in prompt and prompt.endswith("<|im_start|>assistant\n")
