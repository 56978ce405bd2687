"""The one door agents use to reach a model: an engine plus generation settings and cancel token.

It remembers the last messages it sent so the UIs (and tests) can show exactly what each agent saw.

Two kinds of call go through it. ``stream`` is the answer the user reads (the Responder's): it
runs with ``max_new_tokens`` and ``temperature``, which the chat view's per-turn generation
settings set. ``chat`` and ``complete`` are the agents' internal structured calls (planner,
manager, reviewer, router, the tool turn): each passes its own small ``max_new_tokens`` and they
always decode greedily, because their replies are parsed (JSON, a verdict, a route) and sampling
them would make routing and grading random from one run to the next.
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
        self.last_result: ChatResult | None = None  # the engine's result for the last call (token counts)

    def settings(self, max_new_tokens: int | None = None, *, answer: bool = False) -> GenerationSettings:
        """An internal call's settings (greedy, its own length), or with ``answer`` the answer's
        (``max_new_tokens`` and ``temperature`` of this door: the chat view's choices)."""
        from localqwen.runtime.engine.base import GenerationSettings

        if answer:
            return GenerationSettings(max_new_tokens=max_new_tokens or self.max_new_tokens,
                                      temperature=self.temperature, seed=self.seed)
        return GenerationSettings(max_new_tokens=max_new_tokens or self.max_new_tokens, temperature=0.0,
                                  seed=self.seed)

    def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
             max_new_tokens: int | None = None) -> ChatResult:
        self.last_messages = messages
        self.calls += 1
        self.last_result = self.engine.chat(messages, tools=tools, settings=self.settings(max_new_tokens),
                                            cancel=self.cancel)
        return self.last_result

    def complete(self, system: str, user: str, *, max_new_tokens: int | None = None) -> str:
        result = self.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                           max_new_tokens=max_new_tokens)
        return result.text

    def stream(self, messages: list[dict[str, Any]], *, max_new_tokens: int | None = None) -> Iterator[str]:
        """The answer's text deltas, with the answer's settings (see the module's note)."""
        self.last_messages = messages
        self.calls += 1
        self.last_result = None
        yield from self.engine.stream(messages, settings=self.settings(max_new_tokens, answer=True), cancel=self.cancel)
        self.last_result = self.engine.last_result
