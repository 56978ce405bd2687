"""The pieces between OpenAI's shapes and the engine's, without a server."""

from __future__ import annotations

import pytest


def test_tool_call_text_is_held_back_even_when_its_tag_is_split_across_deltas():
    from localqwen.server.model_chat import ToolTextFilter

    text_filter = ToolTextFilter(active=True)
    shown = [text_filter.feed(delta) for delta in ["Let me check. <to", "ol_ca", "ll>\n{\"name\"", "...}"]]
    assert "".join(shown) == "Let me check. "
    assert shown[0] == "Let me check. "  # "<to" held back until it is known to start a call
    passthrough = ToolTextFilter(active=False)
    assert passthrough.feed("<tool_call>") == "<tool_call>"


def test_openai_messages_become_the_engines(tmp_path):
    from localqwen.server.errors import ApiError
    from localqwen.server.wire import engine_messages

    messages = engine_messages([
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "2"},
    ], [tmp_path])
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[2]["tool_calls"] == [{"type": "function", "id": "call_1",
                                          "function": {"name": "f", "arguments": {"x": 1}}}]
    assert messages[3] == {"role": "tool", "content": "2", "tool_call_id": "call_1"}
    with pytest.raises(ApiError, match="not valid JSON"):
        engine_messages([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]}],
                        [tmp_path])
    with pytest.raises(ApiError, match="role"):
        engine_messages([{"role": "robot", "content": "hi"}], [tmp_path])


@pytest.mark.parametrize("cut", [1, 2, 3, 5, 8])
def test_streamed_thinking_goes_out_as_reasoning_never_as_content(cut):
    from localqwen.runtime.engine.tool_calls import split_reasoning
    from localqwen.server.thinking import ThinkingSplitter

    text = "<think>\nThe user greets me. </thinking is not a tag\n</think>\n\nHello <b>there</b>!"
    splitter = ThinkingSplitter()
    pieces = [splitter.feed(text[at:at + cut]) for at in range(0, len(text), cut)] + [splitter.finish()]
    reasoning = "".join(r for r, _ in pieces)
    content = "".join(c for _, c in pieces)
    assert (reasoning.strip(), content) == split_reasoning(text)
    assert "<think>" not in content and "Hello" not in reasoning


def test_an_answer_without_thinking_streams_as_content_and_an_unclosed_block_stays_reasoning():
    from localqwen.server.thinking import ThinkingSplitter

    plain = ThinkingSplitter()
    assert plain.feed("  <th") == ("", "")  # might still become <think>
    assert plain.feed("is> is bold") == ("", "  <this> is bold")
    cut_off = ThinkingSplitter()
    assert cut_off.feed("<think>still thinking when max_tokens hit</thi") == ("still thinking when max_tokens hit", "")
    assert cut_off.finish() == ("</thi", "")


def test_mcp_progress_of_several_bars_is_one_growing_value_that_names_the_bar():
    from localqwen.server.mcp_results import ProgressForwarder
    from localqwen.vocabulary import events as ev

    forwarder = ProgressForwarder()
    sent = [forwarder.forward(ev.Progress(done=done, total=total, task=task, message=message)) for done, total, task, message in [
        (1, 2, "download", "weights"), (2, 2, "download", "weights"),
        (0, 3, "main", "captioning"), (1, 3, "main", "captioning"),
        (2, 2, "download", "weights"),  # an earlier bar again: would not move the value
        (3, 3, "main", "captioning")]]
    assert sent == [(1, 2, "weights"), (2, 2, "weights"), None, (3, 5, "main: captioning"), None,
                    (5, 5, "main: captioning")]
