"""The llama.cpp backend on the real Gemma 3 270M GGUF (llama-cpp-python, no fakes)."""

from __future__ import annotations

import pytest

from localqwen.runtime.engine import GenerationSettings
from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine
from localqwen.runtime.model_files import ModelFileError
from localqwen.vocabulary.cancel import CancelToken

PROMPT = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name three colours."}]


@pytest.fixture(scope="module")
def engine(gemma_gguf_path):
    with LlamaCppEngine(gemma_gguf_path, n_ctx=1024, n_threads=1) as loaded:
        yield loaded


def test_stream_matches_raw_llama_cpp_greedy_output(engine):
    settings = GenerationSettings(max_new_tokens=16)
    deltas = list(engine.stream(PROMPT, settings=settings))
    result = engine.last_result
    assert "".join(deltas) == result.text and result.text
    tokens = engine._tokens(engine.render(PROMPT))
    assert result.prompt_tokens == len(tokens) == engine.count_tokens(PROMPT)
    raw = engine.llm.create_completion(tokens, max_tokens=16, temperature=0.0, top_k=1, repeat_penalty=1.0)
    assert result.text == raw["choices"][0]["text"]
    assert result.completion_tokens == raw["usage"]["completion_tokens"]


def test_gemma_template_is_used_when_the_gguf_has_none(engine):
    prompt = engine.render(PROMPT, tools=[{"type": "function", "function": {"name": "lookup", "parameters": {}}}])
    assert prompt.startswith("<bos><start_of_turn>user\nAnswer briefly.")
    assert '"name": "lookup"' in prompt and prompt.endswith("<start_of_turn>model\n")


def test_stop_and_cancel(engine):
    full = engine.chat(PROMPT, settings=GenerationSettings(max_new_tokens=24)).text
    stop = full.strip()[:3]
    cut = engine.chat(PROMPT, settings=GenerationSettings(max_new_tokens=24, stop=[stop]))
    assert cut.text == full[: full.index(stop)] and cut.finish_reason == "stop"
    cancel = CancelToken()
    for index, _ in enumerate(engine.stream(PROMPT, settings=GenerationSettings(max_new_tokens=100), cancel=cancel)):
        if index == 1:
            cancel.cancel()
    assert engine.last_result.finish_reason == "cancelled" and engine.last_result.completion_tokens <= 4


def test_batch_and_images_without_projector(engine):
    results = engine.chat_batch([PROMPT, [{"role": "user", "content": "Hi"}]], settings=GenerationSettings(max_new_tokens=4))
    assert len(results) == 2 and all(r.completion_tokens <= 4 for r in results)
    assert not engine.supports_images
    with pytest.raises(ValueError, match="text-only"):
        engine.chat([{"role": "user", "content": [{"type": "image", "image": "a.png"}]}])


def test_projector_and_model_files_are_checked_before_loading(gemma_gguf_path, tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        LlamaCppEngine(gemma_gguf_path, mmproj=tmp_path / "mmproj-missing.gguf")
    not_gguf = tmp_path / "mmproj-bad.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(ModelFileError, match="not a GGUF"):
        LlamaCppEngine(gemma_gguf_path, mmproj=not_gguf)


def test_services_route_the_catalog_gguf_to_llama_cpp(gemma_gguf_path):
    from localqwen.config import Config
    from localqwen.paths import app_paths
    from localqwen.services import Services

    services = Services(app_paths(), Config())
    engine = services.engine(str(gemma_gguf_path))
    try:
        assert engine.backend == "llama.cpp" and engine.plan.backend == "llama.cpp"
        assert engine.chat(PROMPT, settings=GenerationSettings(max_new_tokens=2)).completion_tokens <= 2
    finally:
        services.device.evict()


COLOURS_SCHEMA = {"type": "object", "properties": {"colours": {"type": "array", "items": {"type": "string"},
                                                               "minItems": 1, "maxItems": 3}},
                  "required": ["colours"]}


def test_structured_output_follows_a_json_schema_or_a_grammar(engine):
    import json

    from localqwen.runtime.engine import EngineError

    reply = engine.chat(PROMPT, settings=GenerationSettings(max_new_tokens=64, json_schema=COLOURS_SCHEMA))
    parsed = json.loads(reply.text)  # the grammar masked every token that would break the schema
    assert set(parsed) == {"colours"} and 1 <= len(parsed["colours"]) <= 3
    assert all(isinstance(c, str) for c in parsed["colours"])
    yes_no = engine.chat([{"role": "user", "content": "Is the sky green?"}],
                         settings=GenerationSettings(max_new_tokens=4, grammar='root ::= "yes" | "no"'))
    assert yes_no.text in ("yes", "no")
    with pytest.raises(EngineError, match="cannot use this grammar"):
        engine.chat(PROMPT, settings=GenerationSettings(grammar="root ::= ("))
    with pytest.raises(ValueError, match="not both"):
        GenerationSettings(json_schema=COLOURS_SCHEMA, grammar='root ::= "x"')
