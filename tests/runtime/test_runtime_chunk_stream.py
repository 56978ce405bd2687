"""The chunk loop the remote backend and llama.cpp's image chats share (engine/streaming.py),
fed chunks shaped as vLLM and llama.cpp's server send them."""

from __future__ import annotations

from localqwen.runtime.engine.streaming import ChunkStream
from localqwen.vocabulary.cancel import CancelToken


def _chunk(content: str | None = None, *, tool: dict | None = None, finish: str | None = None,
           usage: dict | None = None) -> dict:
    delta: dict = {}
    if content is not None:
        delta["content"] = content
    if tool is not None:
        delta["tool_calls"] = [tool]
    chunk: dict = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def test_text_structured_tool_call_fragments_and_usage():
    chunks = [
        _chunk("Let me look"),
        _chunk(" that up."),
        _chunk(tool={"index": 0, "id": "c1", "function": {"name": "lookup", "arguments": '{"que'}}),
        _chunk(tool={"index": 0, "function": {"arguments": 'ry": "kiwi"}'}}),
        _chunk(finish="stop"),
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 9}},
    ]
    stream = ChunkStream([])
    assert "".join(stream.read(iter(chunks))) == "Let me look that up."
    result = stream.result(int(stream.usage["prompt_tokens"]))
    assert result.finish_reason == "tool_calls"  # a "stop" that called a tool
    assert [(call.name, call.arguments) for call in result.tool_calls] == [("lookup", {"query": "kiwi"})]
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("Let me look that up.", 12, 9)


def test_a_stop_string_split_across_chunks_is_never_shown_and_ends_the_read():
    produced: list[str] = []

    def producer():
        for piece in ["one, tw", "o, END", "ING more", "never read"]:
            produced.append(piece)
            yield _chunk(piece)

    stream = ChunkStream(["ENDING"], default_reason="length")
    shown = "".join(stream.read(producer()))
    assert shown == "one, two, " and stream.reason == "stop"
    assert produced == ["one, tw", "o, END", "ING more"]  # stopped reading at the stop string
    assert stream.result(3).completion_tokens == 3  # no usage sent: text chunks are counted


def test_cancel_stops_and_closes_the_producer():
    closed = []

    def producer():
        try:
            for index in range(100):
                yield _chunk(f"t{index} ")
        finally:
            closed.append(True)

    cancel = CancelToken()
    stream = ChunkStream([], default_reason="length")
    shown = []
    for text in stream.read(producer(), cancel):
        shown.append(text)
        if len(shown) == 2:
            cancel.cancel("enough")
    assert shown == ["t0 ", "t1 "] and stream.reason == "cancelled" and closed == [True]
    assert stream.result(1).finish_reason == "cancelled"


def test_a_stream_without_a_finish_reason_keeps_the_default():
    stream = ChunkStream([], default_reason="length")
    assert list(stream.read([_chunk("a")])) == ["a"] and stream.reason == "length"


def test_reasoning_content_from_a_server_that_splits_thinking_is_kept_as_reasoning():
    # vLLM with a reasoning parser, and LocalQwen's own API, send thinking as reasoning_content.
    chunks = [{"choices": [{"index": 0, "delta": {"reasoning_content": piece}, "finish_reason": None}]}
              for piece in ["Two plus ", "two is four."]]
    chunks += [_chunk("4"), _chunk(finish="stop")]
    stream = ChunkStream([])
    assert "".join(stream.read(iter(chunks))) == "<think>Two plus two is four.</think>4"
    result = stream.result(3)
    assert (result.reasoning, result.text) == ("Two plus two is four.", "4")
    only_thinking = ChunkStream([])
    list(only_thinking.read(iter(chunks[:2])))
    assert only_thinking.result(3).reasoning == "Two plus two is four."  # cut off inside the reasoning
