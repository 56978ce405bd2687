"""OpenAI's response objects: a chat completion, a streamed chunk, usage, the SSE framing.

LocalQwen's own additions ride in fields OpenAI does not use, so standard clients ignore them:
``localqwen_events`` (a plugin model's steps, tool calls, images, tables, warnings and errors, as
LocalQwen event dicts) on a completion or a chunk.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

EXTENSION_FIELD = "localqwen_events"


def new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def finish_reason(reason: str) -> str:
    """The engine's reason in OpenAI's words (a cancelled answer only reaches a client that left)."""
    return reason if reason in ("stop", "length", "tool_calls") else "stop"


def completion(completion_id: str, model: str, message: dict[str, Any], reason: str, use: dict[str, int],
               events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason, "logprobs": None}],
        "usage": use,
    }
    if events is not None:
        body[EXTENSION_FIELD] = events
    return body


def chunk(completion_id: str, model: str, delta: dict[str, Any], reason: str | None = None, *,
          use: dict[str, int] | None = None, events: list[dict[str, Any]] | None = None,
          choices: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}] if choices else [],
    }
    if use is not None:
        body["usage"] = use
    if events:
        body[EXTENSION_FIELD] = events
    return body


def sse(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()
