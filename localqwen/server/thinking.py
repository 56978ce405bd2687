"""Splits a streamed answer into Qwen3's thinking and the answer, as the text arrives.

A thinking model writes ``<think>...</think>`` before its answer. OpenAI clients show ``content``
to the user, so the thinking goes out as ``reasoning_content`` (the field vLLM and DeepSeek use)
and never as content. Tags can be split across deltas, so a possible tag prefix is held back
until the next delta says what it is. Whitespace right after ``</think>`` is dropped, as
``split_reasoning`` drops it from the finished answer.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"


def _held_prefix(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could be the start of ``tag``."""
    return next((size for size in range(min(len(tag) - 1, len(text)), 0, -1) if text.endswith(tag[:size])), 0)


class ThinkingSplitter:
    """``feed(delta) -> (reasoning, content)``; ``finish()`` releases what was held back."""

    def __init__(self) -> None:
        self.state = "start"  # start -> thinking -> answer; or start -> answer
        self.pending = ""

    def feed(self, delta: str) -> tuple[str, str]:
        self.pending += delta
        reasoning = content = ""
        if self.state == "start":
            stripped = self.pending.lstrip()
            if not stripped or (len(stripped) < len(OPEN) and OPEN.startswith(stripped)):
                return "", ""  # could still become "<think>"
            if stripped.startswith(OPEN):
                self.state = "thinking"
                self.pending = stripped[len(OPEN):].lstrip("\n")
            else:
                self.state = "answer"
        if self.state == "thinking":
            at = self.pending.find(CLOSE)
            if at == -1:
                keep = _held_prefix(self.pending, CLOSE)
                reasoning, self.pending = self.pending[:len(self.pending) - keep], self.pending[len(self.pending) - keep:]
                return reasoning, ""
            reasoning = self.pending[:at]
            self.pending = self.pending[at + len(CLOSE):]
            self.state = "after-thinking"
        if self.state == "after-thinking":
            self.pending = self.pending.lstrip()
            if not self.pending:
                return reasoning.rstrip(), ""
            self.state = "answer"
            reasoning = reasoning.rstrip()
        if self.state == "answer":
            content, self.pending = self.pending, ""
        return reasoning, content

    def finish(self) -> tuple[str, str]:
        """At the end of the stream: an unclosed thinking block stays reasoning, anything else is content."""
        rest, self.pending = self.pending, ""
        if self.state == "thinking":
            return rest, ""
        if self.state == "start":
            return "", rest
        return "", rest if self.state == "answer" else ""
