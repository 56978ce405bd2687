"""A chat completion from the default model's engine itself: OpenAI tools and sampling reach it.

The engine streams text; its ``last_result`` then gives the tool calls (parsed from Qwen's
``<tool_call>`` text), the finish reason and the token counts. While streaming, a leading
``<think>`` block goes out as ``reasoning_content`` (never as content), and with tools the text
from the first ``<tool_call>`` on is held back, so a client sees the call only as ``tool_calls``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from localqwen.server import shapes
from localqwen.server.thinking import ThinkingSplitter
from localqwen.server.threads import iterate_in_thread
from localqwen.server.wire import openai_tool_calls
from localqwen.vocabulary.cancel import CancelToken

if TYPE_CHECKING:
    from localqwen.app import Workbench

TOOL_CALL_START = "<tool_call>"


class ToolTextFilter:
    """Passes streamed text until a tool call starts; holds a possible start tag's prefix back."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.text = ""
        self.shown = 0
        self.stopped = False

    def feed(self, delta: str) -> str:
        if not self.active:
            return delta
        self.text += delta
        if self.stopped:
            return ""
        at = self.text.find(TOOL_CALL_START)
        if at != -1:
            self.stopped = True
            return self._show(at)
        hold = next((size for size in range(min(len(TOOL_CALL_START) - 1, len(self.text)), 0, -1)
                     if self.text.endswith(TOOL_CALL_START[:size])), 0)
        return self._show(len(self.text) - hold)

    def _show(self, upto: int) -> str:
        out = self.text[self.shown:max(upto, self.shown)]
        self.shown = max(upto, self.shown)
        return out


class ModelTurn:
    def __init__(self, bench: Workbench, served_id: str, model: str, messages: list[dict[str, Any]],
                 tools: list[dict[str, Any]] | None, settings: Any) -> None:
        self.bench = bench
        self.served_id = served_id
        self.model = model
        self.messages = messages
        self.tools = tools
        self.settings = settings
        self.cancel = CancelToken()
        self.id = shapes.new_id()

    def _generate(self) -> Iterator[tuple[str, Any]]:
        engine = self.bench.services.engine(self.model)
        for delta in engine.stream(self.messages, tools=self.tools, settings=self.settings, cancel=self.cancel):
            yield "text", delta
        yield "result", engine.last_result

    async def stream(self) -> AsyncGenerator[dict[str, Any], None]:
        thinking = ThinkingSplitter()
        filtered = ToolTextFilter(bool(self.tools))
        yield shapes.chunk(self.id, self.served_id, {"role": "assistant", "content": ""})
        async with aclosing(iterate_in_thread(self._generate, self.cancel)) as items:
            async for kind, value in items:
                if kind == "text":
                    delta = self._delta(*thinking.feed(value), filtered)
                    if delta:
                        yield shapes.chunk(self.id, self.served_id, delta)
                    continue
                result = value
                reasoning, rest = thinking.finish()
                delta = {"reasoning_content": reasoning} if reasoning else {}
                if filtered.active:  # what the filter held back that is not a tool call
                    sent = filtered.text[:filtered.shown]
                    rest = result.text[len(sent):] if result.text.startswith(sent) else ""
                if rest:
                    delta["content"] = rest
                if result.tool_calls:
                    delta["tool_calls"] = openai_tool_calls(result.tool_calls, streaming=True)
                use = shapes.usage(result.prompt_tokens, result.completion_tokens)
                yield shapes.chunk(self.id, self.served_id, delta, shapes.finish_reason(result.finish_reason), use=use)

    @staticmethod
    def _delta(reasoning: str, content: str, filtered: ToolTextFilter) -> dict[str, Any]:
        delta: dict[str, Any] = {}
        if reasoning:
            delta["reasoning_content"] = reasoning
        shown = filtered.feed(content) if content else ""
        if shown:
            delta["content"] = shown
        return delta

    async def complete(self) -> dict[str, Any]:
        result = None
        async with aclosing(iterate_in_thread(self._generate, self.cancel)) as items:
            async for kind, value in items:
                if kind == "result":
                    result = value
        assert result is not None
        message: dict[str, Any] = {"role": "assistant", "content": result.text}
        if result.tool_calls:
            message["tool_calls"] = openai_tool_calls(result.tool_calls)
            message["content"] = result.text or None
        if result.reasoning:  # Qwen3's thinking, split off as vLLM does
            message["reasoning_content"] = result.reasoning
        return shapes.completion(self.id, self.served_id, message, shapes.finish_reason(result.finish_reason),
                                 shapes.usage(result.prompt_tokens, result.completion_tokens))
