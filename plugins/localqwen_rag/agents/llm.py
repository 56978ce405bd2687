"""The one door agents use to reach a model: an engine plus generation settings and cancel token.

It remembers the last messages it sent so the UIs (and tests) can show exactly what each agent saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localqwen.runtime.engine.base import ChatResult, Engine, GenerationSettings
    from localqwen.vocabulary.cancel import CancelToken


class LLM:
    def __init__(self, engine: Engine, *, max_new_tokens: int = 256, temperature: float = 0.0,
                 cancel: CancelToken | None = None, seed: int | None = 0) -> None:
        self.engine = engine
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.cancel = cancel
        self.seed = seed
        self.last_messages: list[dict[str, Any]] = []
        self.calls = 0  # model calls made through this door (the pipeline reports them per question)

    def settings(self, max_new_tokens: int | None = None) -> GenerationSettings:
        from localqwen.runtime.engine.base import GenerationSettings

        return GenerationSettings(max_new_tokens=max_new_tokens or self.max_new_tokens,
                                  temperature=self.temperature, seed=self.seed)

    def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
             max_new_tokens: int | None = None) -> ChatResult:
        self.last_messages = messages
        self.calls += 1
        return self.engine.chat(messages, tools=tools, settings=self.settings(max_new_tokens), cancel=self.cancel)

    def complete(self, system: str, user: str, *, max_new_tokens: int | None = None) -> str:
        result = self.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                           max_new_tokens=max_new_tokens)
        return result.text

    def stream(self, messages: list[dict[str, Any]], *, max_new_tokens: int | None = None) -> Iterator[str]:
        self.last_messages = messages
        self.calls += 1
        yield from self.engine.stream(messages, settings=self.settings(max_new_tokens), cancel=self.cancel)
