"""OpenAI tools through the server, and another LocalQwen using this server as its remote engine.

The model is the tiny Qwen3 taught (``teach_reply``) to answer the weather question with a Qwen
tool call, so the call the client receives was really generated and parsed."""

from __future__ import annotations

import json

import pytest
from weather_tool import CALL, QUESTION, WEATHER_TOOL


@pytest.fixture(scope="module")
def tool_model(tmp_path_factory, tiny_qwen3_path):
    from localqwen.testing.tiny_models import teach_reply

    return teach_reply(tiny_qwen3_path, tmp_path_factory.mktemp("serve_tool_model"), QUESTION, CALL,
                       tools=[WEATHER_TOOL])


@pytest.fixture
def tool_api(start_api, tool_model):
    return start_api(f'[plugins.chat]\nmodel = "{tool_model}"\nmax_new_tokens = 40\n')


def test_tool_call_round_trip(tool_api, tool_model):
    client = tool_api.client()
    first = client.chat.completions.create(model=str(tool_model), messages=QUESTION, tools=[WEATHER_TOOL])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and not choice.message.content
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"city": "Paris"}

    # The client runs the tool and sends its result back, in OpenAI's shape.
    follow_up = [*QUESTION, choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": '{"sky": "sunny", "celsius": 21}'}]
    second = client.chat.completions.create(model=str(tool_model), messages=follow_up, tools=[WEATHER_TOOL],
                                            max_tokens=5)
    assert second.choices[0].message.role == "assistant"
    # The engine saw Qwen's own shapes: the assistant's call with dict arguments, then the tool result.
    engine = tool_api.bench.services.engine(str(tool_model))
    native = [*QUESTION,
              {"role": "assistant", "content": "",
               "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                                "arguments": {"city": "Paris"}}}]},
              {"role": "tool", "content": '{"sky": "sunny", "celsius": 21}'}]
    assert second.usage.prompt_tokens == engine.count_tokens(native, [WEATHER_TOOL])
    assert second.usage.prompt_tokens > first.usage.prompt_tokens + 10


def test_a_streamed_tool_call_comes_as_tool_calls_not_text(tool_api, tool_model):
    chunks = list(tool_api.client().chat.completions.create(model=str(tool_model), messages=QUESTION,
                                                            tools=[WEATHER_TOOL], stream=True))
    assert "<tool_call>" not in "".join(c.choices[0].delta.content or "" for c in chunks)
    last = chunks[-1].choices[0]
    assert last.finish_reason == "tool_calls"
    assert [(c.function.name, json.loads(c.function.arguments)) for c in last.delta.tool_calls] == [
        ("get_weather", {"city": "Paris"})]


def test_another_localqwen_chats_through_this_server(tool_api, tool_model, tmp_path, monkeypatch):
    """A second LocalQwen whose [runtime] remote_url is this server: its remote engine gets the
    generated tool call, and its plain chat plugin answers through the server's."""
    from localqwen.app import Workbench
    from localqwen.plugin_api import events as ev

    other_home = tmp_path / "other_home"
    (other_home / "config").mkdir(parents=True)
    (other_home / "config" / "config.toml").write_text(
        f'[runtime]\nremote_url = "{tool_api.url}"\n[plugins.chat]\nmodel = "localqwen/chat"\n', encoding="utf-8")
    monkeypatch.setenv("LOCALQWEN_HOME", str(other_home))
    other = Workbench.create()
    assert other.paths.config_file.parent == other_home / "config"

    engine = other.services.engine(str(tool_model))
    assert engine.backend == "remote"
    result = engine.chat(QUESTION, tools=[WEATHER_TOOL])
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert result.finish_reason == "tool_calls" and result.prompt_tokens > 20

    session = other.conversations.new_session("chat")
    events = list(other.conversations.send("chat", session, "Hello there"))
    done = events[-1]
    assert isinstance(done, ev.Done) and done.status == "ok", events
    assert done.result["completion_tokens"] > 0  # usage travelled back through the stream
    stored = other.conversations.entries("chat", session)
    assert [entry.message["role"] for entry in stored] == ["user", "assistant"]
