"""Tool-call parsing, reasoning split, stop strings while streaming, message conversion."""

from __future__ import annotations

import json

import pytest

from localqwen.runtime.engine import GenerationSettings, parse_tool_calls
from localqwen.runtime.engine.messages import StopScanner, check_messages, to_openai_messages
from localqwen.runtime.engine.remote_backend import _server_sent_events
from localqwen.runtime.engine.streaming import _structured_call
from localqwen.runtime.engine.tool_calls import split_reasoning


def test_parses_qwen_tool_calls_and_keeps_surrounding_text():
    text = (
        'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>{"name": "search", "arguments": "{\\"q\\": \\"tea\\"}"}</tool_call>'
    )
    rest, calls = parse_tool_calls(text)
    assert rest == "Let me check."
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Paris"}), ("search", {"q": "tea"})]


def test_broken_tool_call_stays_in_the_text():
    text = "<tool_call>{not json}</tool_call> ok"
    assert parse_tool_calls(text) == (text, [])
    # An unterminated block at the end (generation hit max tokens) still parses when complete JSON.
    assert parse_tool_calls('<tool_call>{"name": "x", "arguments": {}}')[1][0].name == "x"


def test_split_reasoning():
    assert split_reasoning("<think>\nhmm\n</think>\n\nAnswer") == ("hmm", "Answer")
    assert split_reasoning("no thinking") == ("", "no thinking")


@pytest.mark.parametrize(
    "pieces",
    [["Hello wor", "ld. ST", "OP here"], ["Hello world. S", "T", "O", "P"], ["Hello world. STOP"]],
)
def test_stop_scanner_never_shows_a_stop_string_split_across_deltas(pieces):
    scanner = StopScanner(["STOP"])
    shown = "".join(scanner.feed(piece) for piece in pieces) + scanner.finish()
    assert shown == "Hello world. " and scanner.stopped and scanner.text == "Hello world. "


def test_stop_scanner_releases_held_text_at_the_end():
    scanner = StopScanner(["STOP"])
    assert scanner.feed("abc ST") == "abc "
    assert scanner.finish() == "ST" and not scanner.stopped


def test_settings_are_validated():
    with pytest.raises(ValueError, match="max_new_tokens"):
        GenerationSettings(max_new_tokens=0)
    with pytest.raises(ValueError, match="top_p"):
        GenerationSettings(top_p=0)


def test_messages_are_checked_with_specific_errors():
    with pytest.raises(ValueError, match="non-empty"):
        check_messages([], allow_images=True)
    with pytest.raises(ValueError, match="type 'audio'"):
        check_messages([{"role": "user", "content": [{"type": "audio"}]}], allow_images=True)


def test_openai_wire_format_has_data_urls_and_json_arguments(tmp_path):
    from PIL import Image

    image = tmp_path / "dot.png"
    Image.new("RGB", (4, 4), (0, 0, 255)).save(image)
    messages = [
        {"role": "user", "content": [{"type": "image", "image": str(image)}, {"type": "text", "text": "?"}]},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "name": "f", "content": "42"},
    ]
    wire = to_openai_messages(messages)
    assert wire[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    call = wire[1]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"a": 1}
    assert wire[2]["tool_call_id"] == call["id"]


def test_server_sent_events_and_structured_tool_calls():
    lines = [b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n', b"\n", b": keep-alive\n", b"data: [DONE]\n",
             b'data: {"never": "read"}\n']
    assert list(_server_sent_events(iter(lines))) == [{"choices": [{"delta": {"content": "Hi"}}]}]
    call = _structured_call({"name": "get_weather", "arguments": '{"city": "Paris"}'})
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
