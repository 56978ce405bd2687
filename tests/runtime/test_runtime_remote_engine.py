"""The remote backend against a real OpenAI-compatible server: llama-cpp-python's own server
(`python -m llama_cpp.server`) over the Gemma GGUF, started on 127.0.0.1 on a free port."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from localqwen.runtime.engine import EngineError, GenerationSettings
from localqwen.runtime.engine.remote_backend import RemoteEngine

PROMPT = [{"role": "user", "content": "Name three colours."}]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(gemma_gguf_path, tmp_path_factory):
    import llama_cpp.server.app  # noqa: F401 - the `llama` extra; `make test` installs it
    port = _free_port()
    log = (tmp_path_factory.mktemp("server") / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_gguf_path), "--host", "127.0.0.1",
         "--port", str(port), "--chat_format", "gemma", "--n_threads", "1", "--n_ctx", "1024",
         "--model_alias", "gemma-test"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"llama_cpp.server did not start; see {log.name}")
            time.sleep(0.3)
    yield url
    process.terminate()
    process.wait(timeout=30)
    log.close()


def test_streams_counts_and_stops_against_a_real_server(server):
    engine = RemoteEngine(server)
    assert engine.model_id == "gemma-test"  # picked from /v1/models
    deltas = list(engine.stream(PROMPT, settings=GenerationSettings(max_new_tokens=10)))
    result = engine.last_result
    assert len(deltas) > 1 and "".join(deltas) == result.text
    assert 0 < result.completion_tokens <= 10
    prompt_tokens = engine.count_tokens(PROMPT)
    assert prompt_tokens > 5 and result.prompt_tokens == prompt_tokens
    stop = result.text.strip()[:2]
    cut = engine.chat(PROMPT, settings=GenerationSettings(max_new_tokens=10, stop=[stop]))
    assert stop not in cut.text and cut.finish_reason == "stop"


def test_unreachable_server_and_unknown_model_give_clear_errors(server):
    # A server with one model serves it whatever name the app uses for it (vLLM serves hub ids).
    assert RemoteEngine(server, model_id="qwen3-vl-8b-instruct").model_id == "gemma-test"
    with pytest.raises(EngineError, match="cannot reach"):
        RemoteEngine(f"http://127.0.0.1:{_free_port()}/v1")


def test_cancel_mid_stream_ends_the_request(server):
    from localqwen.vocabulary.cancel import CancelToken

    engine = RemoteEngine(server)
    cancel = CancelToken()
    deltas = []
    for delta in engine.stream(PROMPT, settings=GenerationSettings(max_new_tokens=40), cancel=cancel):
        deltas.append(delta)
        cancel.cancel("enough")
    result = engine.last_result
    assert result.finish_reason == "cancelled" and len(deltas) == 1
    assert result.completion_tokens == 1 and result.text == deltas[0]
    assert engine.chat(PROMPT, settings=GenerationSettings(max_new_tokens=3)).completion_tokens > 0  # server still serves


def test_structured_output_is_asked_of_the_server(server):
    import json

    engine = RemoteEngine(server)
    schema = {"type": "object", "properties": {"answer": {"enum": ["red", "green", "blue"]}}, "required": ["answer"]}
    reply = engine.chat(PROMPT, settings=GenerationSettings(max_new_tokens=24, json_schema=schema))
    assert json.loads(reply.text)["answer"] in ("red", "green", "blue")
