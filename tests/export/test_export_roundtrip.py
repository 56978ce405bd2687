"""The issue's proof, end to end on real parts: a tiny Qwen3 and a tiny Qwen3-VL taught a fixed reply
with LoRA -> merged -> GGUF F16 (+ mmproj) -> quantized by llama.cpp -> loaded in LocalQwen's own
llama.cpp engine -> the same greedy answer as transformers (the VL one about an image)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localqwen.runtime.engine import GenerationSettings
from localqwen.training.gguf_export import export_gguf
from localqwen.vocabulary import events as ev

pytestmark = pytest.mark.slow
REPLY_TEXT = "Merged weights answer here."
REPLY_IMAGE = "A red square."


@pytest.fixture(scope="module", autouse=True)
def converter():
    """llama.cpp's converter, unpacked from the llama-cpp-python sdist (`make setup` does it; else pip fetches it)."""
    from localqwen.training.llama_converter import ConverterNotFound, ensure_converter

    try:
        return ensure_converter()
    except ConverterNotFound as exc:
        pytest.skip(f"no GGUF converter here and none could be fetched: {exc}")


def teach_lora(base: Path, out: Path, messages: list, reply: str, images: list | None = None) -> str:
    """Train a LoRA (LocalQwen's adapter method, as the trainer applies it) until greedy decoding gives
    ``reply``; save it like the trainer does and return the transformers greedy answer."""
    import torch

    from localqwen.training.after import generate
    from localqwen.training.methods import apply_method, save_trained
    from localqwen.training.modeling import load_model_and_processor

    torch.manual_seed(0)
    model, processor, _ = load_model_and_processor(base, precision="fp32")
    tuned = apply_method(model, "lora", {"r": 8, "alpha": 16, "dropout": 0.0, "include_mlp": True}).model
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if images:
        batch = dict(processor(text=[prompt + reply + "<|im_end|>"], images=images, return_tensors="pt"))
        prompt_len = processor(text=[prompt], images=images, return_tensors="pt")["input_ids"].shape[1]
    else:
        batch = dict(processor([prompt + reply + "<|im_end|>"], add_special_tokens=False, return_tensors="pt"))
        prompt_len = processor([prompt], add_special_tokens=False, return_tensors="pt")["input_ids"].shape[1]
    labels = batch["input_ids"].clone()
    labels[:, :prompt_len] = -100  # learn the reply (and its end) only
    optimizer = torch.optim.AdamW([p for p in tuned.parameters() if p.requires_grad], lr=1e-2)
    answer = ""
    for _round in range(10):
        tuned.train()
        for _step in range(20):
            tuned(**batch, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        answer = generate(tuned, processor, [messages], max_new_tokens=16)[0]
        if answer == reply:
            break
    assert answer == reply, f"the LoRA did not learn the reply: {answer!r}"
    save_trained(tuned, out, "lora")
    return answer


def _services():
    from localqwen.config import Config
    from localqwen.paths import app_paths
    from localqwen.services import Services

    return Services(app_paths(), Config())


def test_tiny_qwen3_lora_to_gguf_answers_like_transformers(tmp_path, tiny_qwen3_path):
    messages = [{"role": "user", "content": "Who answers?"}]
    expected = teach_lora(tiny_qwen3_path, tmp_path / "adapter", messages, REPLY_TEXT)

    events: list = []
    result = export_gguf(tmp_path / "adapter", tmp_path / "gguf", ["F16", "Q8_0", "Q4_K_M"], name="tiny-chat",
                         threads=2, progress=events.append)  # the base comes from the adapter's own config
    assert [f.quant for f in result.files] == ["F16", "Q8_0", "Q4_K_M"] and result.mmproj is None
    assert [f.path.name for f in result.files] == ["tiny-chat-F16.gguf", "tiny-chat-Q8_0.gguf", "tiny-chat-Q4_K_M.gguf"]
    sizes = {f.quant: f.size_bytes for f in result.files}
    assert sizes["F16"] > sizes["Q8_0"] > sizes["Q4_K_M"] > 0
    assert [e.step for e in events if isinstance(e, ev.Step) and e.status == "finished"] == [
        "merge", "convert", "quantize-Q8_0", "quantize-Q4_K_M"]
    tensors = [e for e in events if isinstance(e, ev.Progress) and e.task == "quantize Q4_K_M"]
    assert tensors and tensors[-1].done == tensors[-1].total > 1  # llama.cpp's per-tensor progress, relayed
    assert not list(tmp_path.joinpath("gguf").glob(".*"))  # the merged model and logs were temporary
    modelfile = result.modelfile.read_text()
    assert "FROM ./tiny-chat-Q8_0.gguf" in modelfile and 'PARAMETER stop "<|im_end|>"' in modelfile
    assert "ollama create tiny-chat -f tiny-chat.Modelfile" in result.readme.read_text()

    services = _services()
    try:
        settings = GenerationSettings(max_new_tokens=16)
        f16 = services.engine(str(result.path("F16")))
        assert f16.backend == "llama.cpp"
        assert f16.chat(messages, settings=settings).text.strip() == expected == REPLY_TEXT
        services.device.evict()
        quantized = services.engine(str(result.path("Q4_K_M")))
        assert quantized.chat(messages, settings=settings).text.strip()  # loads and answers
    finally:
        services.device.evict()


def test_tiny_qwen3_vl_lora_to_gguf_answers_about_an_image(tmp_path, tiny_qwen3_vl_path):
    from PIL import Image

    image = Image.new("RGB", (64, 64), (230, 20, 20))
    image.save(tmp_path / "red.png")
    messages = [{"role": "user", "content": [{"type": "image", "image": str(tmp_path / "red.png")},
                                             {"type": "text", "text": "What colour?"}]}]
    expected = teach_lora(tiny_qwen3_vl_path, tmp_path / "adapter", messages, REPLY_IMAGE, images=[image])

    result = export_gguf(tmp_path / "adapter", tmp_path / "gguf", ["F16", "Q8_0"], name="tiny-vl", threads=2)
    assert result.mmproj == tmp_path / "gguf" / "mmproj-tiny-vl-F16.gguf" and result.mmproj.is_file()
    assert "FROM ./mmproj-tiny-vl-F16.gguf" in result.modelfile.read_text()

    services = _services()
    try:
        for quant in ("F16", "Q8_0"):
            # The engine finds the projector beside each model file by its name.
            assert services.models.resolve(str(result.path(quant))).mmproj == result.mmproj
        engine = services.engine(str(result.path("F16")), task="vision")
        assert engine.supports_images
        answer = engine.chat(messages, settings=GenerationSettings(max_new_tokens=16))
        assert answer.text.strip() == expected == REPLY_IMAGE
    finally:
        services.device.evict()
