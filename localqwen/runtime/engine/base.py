"""The engine interface every backend implements, and the values it passes around."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from localqwen.vocabulary.cancel import CancelToken

Messages = list[dict[str, Any]]
Tools = list[dict[str, Any]]


@dataclass
class GenerationSettings:
    max_new_tokens: int = 256
    temperature: float = 0.0  # 0 means greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 means off
    repetition_penalty: float = 1.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    # Structured output: the reply must match this JSON schema, or this GBNF grammar (llama.cpp's
    # grammar language). Backends that cannot enforce it refuse (``supports_structured_output``).
    json_schema: dict[str, Any] | None = None
    grammar: str | None = None

    def __post_init__(self) -> None:
        if self.json_schema is not None and self.grammar is not None:
            raise ValueError("give json_schema or grammar, not both")
        if self.json_schema is not None and not isinstance(self.json_schema, dict):
            raise ValueError(f"json_schema must be a JSON schema object, got {type(self.json_schema).__name__}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def constrained(self) -> bool:
        return self.json_schema is not None or self.grammar is not None


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]

    def to_message_dict(self) -> dict[str, Any]:
        """The chat-format shape an assistant message carries in ``tool_calls``."""
        return {"type": "function", "function": {"name": self.name, "arguments": self.arguments}}


FinishReason = Literal["stop", "length", "tool_calls", "cancelled"]


@dataclass
class ChatResult:
    text: str
    tool_calls: list[ToolCall]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    reasoning: str = ""

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message_dict() for call in self.tool_calls]
        return message


@dataclass(frozen=True)
class NextTokenScores:
    """What ``Engine.next_token_logprobs`` measured: per continuation, the token its reply would
    begin with and that token's log-probability over the whole vocabulary, from one prompt pass."""

    tokens: list[int]
    logprobs: list[float]
    prompt_tokens: int


class EngineError(RuntimeError):
    """A model could not be loaded or run; the message says why and what to do."""


class UnsupportedSetting(EngineError):
    """The loaded backend cannot honour a generation setting (e.g. structured output on transformers)."""


class Engine:
    """Chat with one loaded model. Subclasses implement ``_stream`` and ``count_tokens``."""

    model_id: str = ""
    backend: str = ""
    supports_images: bool = False
    # Can it force its reply to match ``GenerationSettings.json_schema`` / ``grammar``? llama.cpp
    # masks tokens with a grammar; a remote server is asked to (and says so if it cannot).
    supports_structured_output: bool = False
    # Can it score how the reply would begin (``next_token_logprobs``: one prompt pass, the last
    # position's log-probabilities)? llama.cpp and transformers can; a remote server cannot.
    supports_next_token_scores: bool = False

    def __init__(self) -> None:
        self.last_result: ChatResult | None = None

    # -- the public interface -------------------------------------------------------------
    def chat(
        self,
        messages: Messages,
        *,
        tools: Tools | None = None,
        settings: GenerationSettings | None = None,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        for _ in self.stream(messages, tools=tools, settings=settings, cancel=cancel):
            pass
        assert self.last_result is not None
        return self.last_result

    def stream(
        self,
        messages: Messages,
        *,
        tools: Tools | None = None,
        settings: GenerationSettings | None = None,
        cancel: CancelToken | None = None,
    ) -> Iterator[str]:
        """Yield text deltas; afterwards ``last_result`` holds the full :class:`ChatResult`."""
        from localqwen.runtime.engine.messages import check_messages

        self.ensure_open()
        check_messages(messages, allow_images=self.supports_images, model_id=self.model_id)
        settings = settings or GenerationSettings()
        self.check_settings(settings)
        self.last_result = None
        yield from self._stream(messages, tools or None, settings, cancel)

    def chat_batch(
        self,
        conversations: list[Messages],
        *,
        tools: Tools | None = None,
        settings: GenerationSettings | None = None,
        cancel: CancelToken | None = None,
    ) -> list[ChatResult]:
        """Answer several conversations (each offered ``tools``). Backends that can batch for real override this."""
        return [self.chat(messages, tools=tools, settings=settings, cancel=cancel) for messages in conversations]

    def check_settings(self, settings: GenerationSettings) -> None:
        """Refuse, before any work, what this backend cannot honour."""
        if settings.constrained and not self.supports_structured_output:
            raise UnsupportedSetting(f"{self.model_id} ({self.backend}) cannot force its reply to match a JSON schema or "
                              "grammar; use a GGUF model (llama.cpp) or a remote engine for structured output")

    def count_tokens(self, messages: Messages, tools: Tools | None = None) -> int:
        raise NotImplementedError

    def next_token_logprobs(self, messages: Messages, continuations: list[str], *,
                            tools: Tools | None = None) -> NextTokenScores:
        """For each continuation, the log-probability that the assistant's reply to ``messages``
        begins with that continuation's first token (a choice among a few answers scored from one
        prompt evaluation instead of sampling one). Backends that can override this."""
        raise UnsupportedSetting(f"{self.model_id} ({self.backend}) cannot score next tokens; "
                                 "use a GGUF model (llama.cpp) or a transformers model folder")

    def close(self) -> None:
        """Free the model. Safe to call twice."""
        self.closed = True

    closed = False

    def ensure_open(self) -> None:
        if self.closed:
            raise EngineError(
                f"{self.model_id} was unloaded (another model needed the memory); ask ctx.engine() again"
            )

    # -- for subclasses -------------------------------------------------------------------
    def _stream(
        self,
        messages: Messages,
        tools: Tools | None,
        settings: GenerationSettings,
        cancel: CancelToken | None,
    ) -> Iterator[str]:
        raise NotImplementedError

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id!r} backend={self.backend}>"
