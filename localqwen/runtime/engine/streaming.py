"""What the backends share after the tokens: the result built from generated text, and the
loop that reads OpenAI-style chat-completion chunks.

Two backends receive chunks rather than tokens: the remote one (server-sent events from vLLM,
llama.cpp's server, ...) and llama.cpp's image chats (``create_chat_completion(stream=True)``).
Both go through :class:`ChunkStream`, so stop strings, cancel, usage and streamed tool-call
fragments are handled the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from localqwen.runtime.engine.base import ChatResult, ToolCall
from localqwen.runtime.engine.messages import StopScanner
from localqwen.runtime.engine.tool_calls import parse_tool_calls, split_reasoning

if TYPE_CHECKING:
    from localqwen.vocabulary.cancel import CancelToken


def chat_result(text: str, prompt_tokens: int, completion_tokens: int, reason: str,
                structured_calls: Iterable[ToolCall] = ()) -> ChatResult:
    """The result of a finished generation: reasoning, answer and tool calls split from ``text``.

    ``structured_calls`` are calls the server sent as structured fragments instead of text.
    """
    reasoning, answer = split_reasoning(text)
    answer, calls = parse_tool_calls(answer)
    calls += list(structured_calls)
    if calls and reason == "stop":
        reason = "tool_calls"
    return ChatResult(answer.strip() if calls or reasoning else answer, calls, prompt_tokens,
                      completion_tokens, reason, reasoning)


class ChunkStream:
    """Reads chat-completion chunks (``{"choices": [{"delta": ..., "finish_reason": ...}], "usage": ...}``).

    ``read`` yields the text that is safe to show (stop strings held back and cut); afterwards
    ``reason``, ``usage``, ``text_chunks`` and :meth:`result` describe what was generated.
    ``reason`` starts as ``default_reason`` for a stream that ends without naming one.
    """

    def __init__(self, stop: list[str], *, default_reason: str = "stop") -> None:
        self.scanner = StopScanner(stop)
        self.reason = default_reason
        self.usage: dict[str, Any] = {}
        self.text_chunks = 0  # chunks that carried text: the token count when the server sends no usage
        self._calls: dict[int, dict[str, str]] = {}  # structured tool-call fragments by index
        self._thinking = False  # inside reasoning_content the server sent

    def read(self, chunks: Iterable[dict[str, Any]], cancel: CancelToken | None = None) -> Iterator[str]:
        try:
            for chunk in chunks:
                self.usage = chunk.get("usage") or self.usage
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    text = self._with_thinking_tags(delta.get("reasoning_content") or "", delta.get("content") or "")
                    if text:
                        self.text_chunks += 1
                        shown = self.scanner.feed(text)
                        if shown:
                            yield shown
                    for fragment in delta.get("tool_calls") or []:
                        entry = self._calls.setdefault(fragment.get("index", len(self._calls)),
                                                       {"name": "", "arguments": ""})
                        function = fragment.get("function") or {}
                        entry["name"] += function.get("name") or ""
                        entry["arguments"] += function.get("arguments") or ""
                    if choice.get("finish_reason"):
                        self.reason = choice["finish_reason"]
                if self.scanner.stopped:
                    self.reason = "stop"
                    break
                if cancel is not None and cancel.cancelled:
                    self.reason = "cancelled"
                    break
        finally:
            # Stop the producer now (llama.cpp stops generating, an HTTP stream is let go), not at
            # garbage collection.
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        if self._thinking:  # the stream ended (or went on to tool calls) inside the reasoning
            self._thinking = False
            closed = self.scanner.feed("</think>")
            if closed:
                yield closed
        tail = self.scanner.finish()
        if tail:
            yield tail

    def _with_thinking_tags(self, reasoning: str, content: str) -> str:
        """A server that splits thinking off (vLLM's reasoning parser, LocalQwen's own API) sends it as
        ``reasoning_content``; put it back in ``<think>`` tags so the result splits it like local text."""
        text = ""
        if reasoning and not self._thinking:
            self._thinking = True
            text += "<think>"
        text += reasoning
        if content and self._thinking:
            self._thinking = False
            text += "</think>"
        return text + content

    def result(self, prompt_tokens: int, completion_tokens: int | None = None) -> ChatResult:
        """The :class:`ChatResult`; completion tokens from the usage the server sent, else counted chunks."""
        if completion_tokens is None:
            completion_tokens = int(self.usage.get("completion_tokens", self.text_chunks))
        calls = [_structured_call(entry) for entry in self._calls.values() if entry["name"]]
        return chat_result(self.scanner.text, prompt_tokens, completion_tokens, self.reason, calls)


def _structured_call(entry: dict[str, str]) -> ToolCall:
    try:
        arguments = json.loads(entry["arguments"] or "{}")
    except json.JSONDecodeError:
        arguments = {"value": entry["arguments"]}
    return ToolCall(entry["name"], arguments if isinstance(arguments, dict) else {"value": arguments})
