"""A scripted backend of the real :class:`Engine` base class, for deterministic chat-view tests.

It streams a fixed answer word by word (optionally slowly, so "stop" can be tested) and may end
with tool calls. Where a test needs a real model it loads the tiny Qwen3 through the runtime.
"""

from __future__ import annotations

import time
from typing import Any

from localqwen.runtime.engine.base import ChatResult, Engine, ToolCall


class ScriptedEngine(Engine):
    backend = "scripted"
    model_id = "scripted"
    supports_images = True

    def __init__(self, answer: str = "Hello from the **scripted** engine.", *, delay: float = 0.0,
                 tool_calls: list[ToolCall] | None = None) -> None:
        super().__init__()
        self.answer = answer
        self.delay = delay
        self.tool_calls = tool_calls or []
        self.seen: list[list[dict[str, Any]]] = []

    def _stream(self, messages, tools, settings, cancel):
        self.seen.append(messages)
        words = self.answer.split(" ")
        sent = []
        for index, word in enumerate(words):
            if cancel is not None and cancel.cancelled:
                self.last_result = ChatResult("".join(sent), [], 1, len(sent), "cancelled")
                return
            piece = word if index == 0 else " " + word
            sent.append(piece)
            yield piece
            if self.delay:
                time.sleep(self.delay)
        self.last_result = ChatResult(self.answer, list(self.tool_calls), len(messages), len(words),
                                      "tool_calls" if self.tool_calls else "stop")

    def count_tokens(self, messages, tools=None) -> int:
        return sum(len(str(m.get("content", "")).split()) for m in messages)
