"""The transformers backend on the tiny Qwen3 / Qwen3-VL models (real transformers, real generate)."""

from __future__ import annotations

import threading

import pytest
from weather_tool import CALL as ANSWER
from weather_tool import QUESTION, WEATHER_TOOL

from localqwen.runtime.engine import EngineError, GenerationSettings, load_engine
from localqwen.runtime.engine.transformers_backend import TransformersEngine
from localqwen.vocabulary.cancel import CancelToken


@pytest.fixture(scope="module")
def engine(tiny_qwen3_path):
    with TransformersEngine(tiny_qwen3_path) as loaded:
        yield loaded


@pytest.fixture(scope="module")
def vl_engine(tiny_qwen3_vl_path):
    with TransformersEngine(tiny_qwen3_vl_path) as loaded:
        yield loaded


@pytest.fixture(scope="module")
def tool_calling_path(tmp_path_factory, tiny_qwen3_path):
    """The tiny Qwen3 overfitted (a couple of seconds) to answer QUESTION with a tool call, so
    the engine's parsing is checked on text a real model generated."""
    from localqwen.testing.tiny_models import teach_reply

    return teach_reply(tiny_qwen3_path, tmp_path_factory.mktemp("tool_model"), QUESTION, ANSWER, tools=[WEATHER_TOOL])


def test_stream_yields_deltas_that_add_up_to_the_result(engine):
    settings = GenerationSettings(max_new_tokens=12)
    deltas = list(engine.stream([{"role": "user", "content": "Describe the image."}], settings=settings))
    result = engine.last_result
    assert result is not None and "".join(deltas) == result.text
    assert result.completion_tokens == 12 and result.finish_reason == "length"
    assert result.prompt_tokens == engine.count_tokens([{"role": "user", "content": "Describe the image."}])


def test_chat_matches_plain_generate(engine):
    import torch

    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    result = engine.chat(messages, settings=GenerationSettings(max_new_tokens=10))
    inputs = engine.encode([messages])
    with torch.no_grad():
        out = engine.model.generate(**inputs, max_new_tokens=10, do_sample=False)
    expected = engine.tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert result.text == expected


def test_stop_string_cuts_the_text(engine):
    full = engine.chat(QUESTION, settings=GenerationSettings(max_new_tokens=16)).text
    assert len(full) >= 4
    stop = full[2:4]
    cut = engine.chat(QUESTION, settings=GenerationSettings(max_new_tokens=16, stop=[stop]))
    assert cut.text == full[: full.index(stop)] and cut.finish_reason == "stop"
    assert cut.completion_tokens < 16


def test_cancel_stops_generation(engine):
    cancel = CancelToken()
    seen = []
    for delta in engine.stream(QUESTION, settings=GenerationSettings(max_new_tokens=200), cancel=cancel):
        seen.append(delta)
        if len(seen) == 3:
            cancel.cancel()
    assert engine.last_result.finish_reason == "cancelled"
    assert engine.last_result.completion_tokens < 200


def test_breaking_out_of_a_stream_releases_the_model(engine):
    for _ in engine.stream(QUESTION, settings=GenerationSettings(max_new_tokens=100)):
        break
    # The generation thread was halted and joined: the next call is not blocked.
    done = threading.Event()
    threading.Thread(target=lambda: (engine.chat(QUESTION, settings=GenerationSettings(max_new_tokens=2)), done.set())).start()
    assert done.wait(30)


def test_batch_with_left_padding_matches_one_by_one(engine):
    conversations = [
        [{"role": "user", "content": "Hi"}],
        [{"role": "user", "content": "A much longer question about the weather in Paris and Hangzhou today"}],
        [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Count to five"}],
    ]
    settings = GenerationSettings(max_new_tokens=8)
    batch = engine.chat_batch(conversations, settings=settings)
    single = [engine.chat(messages, settings=settings) for messages in conversations]
    assert [r.text for r in batch] == [r.text for r in single]
    assert [r.prompt_tokens for r in batch] == [r.prompt_tokens for r in single]
    assert len({r.prompt_tokens for r in batch}) == 3


def test_sampling_with_a_seed_is_reproducible(engine):
    settings = GenerationSettings(max_new_tokens=10, temperature=1.0, top_p=0.9, top_k=50, seed=7)
    assert engine.chat(QUESTION, settings=settings).text == engine.chat(QUESTION, settings=settings).text


def test_text_model_rejects_images_clearly(engine, tmp_path):
    with pytest.raises(ValueError, match="text-only"):
        engine.chat([{"role": "user", "content": [{"type": "image", "image": "x.png"}, {"type": "text", "text": "?"}]}])
    with pytest.raises(ValueError, match="role"):
        engine.chat([{"role": "robot", "content": "hi"}])


def test_vision_engine_streams_with_an_image(vl_engine, tmp_path):
    from PIL import Image

    image_path = tmp_path / "red.png"
    Image.new("RGB", (120, 90), (220, 20, 20)).save(image_path)
    messages = [{"role": "user", "content": [{"type": "image", "image": str(image_path)}, {"type": "text", "text": "Describe."}]}]
    assert vl_engine.supports_images
    deltas = list(vl_engine.stream(messages, settings=GenerationSettings(max_new_tokens=6)))
    result = vl_engine.last_result
    assert "".join(deltas) == result.text and result.completion_tokens == 6
    # The image became vision tokens: more prompt tokens than the same text without it.
    text_only = [{"role": "user", "content": "Describe."}]
    assert result.prompt_tokens > vl_engine.count_tokens(text_only) + 2
    batch = vl_engine.chat_batch([messages, text_only], settings=GenerationSettings(max_new_tokens=6))
    assert batch[0].text == result.text
    with pytest.raises(ValueError, match="image file not found"):
        vl_engine.chat([{"role": "user", "content": [{"type": "image", "image": str(tmp_path / "missing.png")}]}])


def test_tool_calls_generated_by_a_real_model_are_parsed(tool_calling_path):
    with TransformersEngine(tool_calling_path) as engine:
        result = engine.chat(QUESTION, tools=[WEATHER_TOOL], settings=GenerationSettings(max_new_tokens=40))
    assert result.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert result.text == ""
    assert result.to_message()["tool_calls"][0]["function"]["name"] == "get_weather"


def test_load_engine_plans_and_caches_through_services(tiny_qwen3_path):
    from localqwen.config import Config
    from localqwen.paths import app_paths
    from localqwen.services import Services

    services = Services(app_paths(), Config())
    engine = services.engine(str(tiny_qwen3_path))
    assert engine.backend == "transformers" and engine.plan.device == "cpu"
    assert services.engine(str(tiny_qwen3_path)) is engine
    assert load_engine(tiny_qwen3_path, models=services.models, device=services.device,
                       runtime=services.config.runtime) is engine
    assert engine.chat(QUESTION, settings=GenerationSettings(max_new_tokens=3)).completion_tokens == 3
    services.device.evict()
    assert "model" not in engine.__dict__
    with pytest.raises(EngineError, match="was unloaded"):
        engine.chat(QUESTION)
    reloaded = services.engine(str(tiny_qwen3_path))
    assert reloaded is not engine and reloaded.chat(QUESTION, settings=GenerationSettings(max_new_tokens=1))


def test_structured_output_is_refused_before_any_work(engine):
    # transformers has no grammar sampler here: a caller learns it at once and can fall back.
    schema = {"type": "object"}
    with pytest.raises(EngineError, match="cannot force its reply to match a JSON schema"):
        engine.chat([{"role": "user", "content": "hi"}], settings=GenerationSettings(json_schema=schema))
    with pytest.raises(EngineError, match="structured output"):
        engine.chat_batch([[{"role": "user", "content": "hi"}]], settings=GenerationSettings(grammar='root ::= "x"'))
