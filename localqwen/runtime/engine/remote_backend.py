"""Remote backend: any OpenAI-compatible chat-completions server (vLLM, llama.cpp's server, ...).

Plain ``urllib`` with server-sent events, so it needs no extra dependency.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from localqwen.runtime.engine.base import Engine, EngineError, GenerationSettings, Messages, Tools
from localqwen.runtime.engine.messages import to_openai_messages
from localqwen.runtime.engine.streaming import ChunkStream

if TYPE_CHECKING:
    from localqwen.vocabulary.cancel import CancelToken


class RemoteEngine(Engine):
    backend = "remote"
    supports_structured_output = True  # asked of the server; one that cannot says so in its error

    def __init__(self, base_url: str, *, model_id: str = "", api_key: str | None = None,
                 api_key_env: str = "", supports_images: bool = True, timeout: float = 600.0) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.api_key = api_key or (os.environ.get(api_key_env, "") if api_key_env else "")
        self.timeout = timeout
        self.supports_images = supports_images
        self.model_id = self._pick_model(model_id)

    # -- HTTP ------------------------------------------------------------------------------
    def _request(self, path: str, payload: dict[str, Any] | None = None) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(payload).encode("utf-8") if payload is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers,
                                         method="POST" if data is not None else "GET")
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", errors="replace")[:500]
            raise EngineError(f"{self.base_url}{path} answered HTTP {exc.code}: {body}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise EngineError(f"cannot reach the remote server at {self.base_url}: {exc}") from exc

    def _completion_request(self, payload: dict[str, Any]) -> Any:
        """POST a chat completion. OpenAI, vLLM and LocalQwen take ``response_format`` as
        ``json_schema``; llama-cpp-python's server only as ``json_object`` with a ``schema``: a
        server that refuses the first shape is asked once more in the second."""
        try:
            return self._request("/chat/completions", payload)
        except EngineError as exc:
            wanted = payload.get("response_format") or {}
            if wanted.get("type") != "json_schema" or "response_format" not in str(exc):
                raise
            retry = {**payload, "response_format": {"type": "json_object", "schema": wanted["json_schema"]["schema"]}}
            return self._request("/chat/completions", retry)

    def _json(self, path: str, payload: dict[str, Any] | None = None) -> Any:
        with self._request(path, payload) as response:
            return json.loads(response.read())

    def _pick_model(self, wanted: str) -> str:
        """The served model named ``wanted``, or the server's first model when it serves one."""
        served = [entry["id"] for entry in self._json("/models").get("data", [])]
        if wanted and (wanted in served or not served):
            return wanted
        if not served:
            raise EngineError(f"{self.base_url} serves no models")
        if wanted and len(served) > 1:
            raise EngineError(f"{self.base_url} does not serve {wanted!r}; it serves {', '.join(served)}")
        return served[0]

    def _payload(self, messages: Messages, tools: Tools | None, settings: GenerationSettings,
                 stream: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model_id,
            "messages": to_openai_messages(messages),
            "max_tokens": settings.max_new_tokens,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "stream": stream,
        }
        if stream:
            payload["stream_options"] = {"include_usage": True}
        if settings.top_k:
            payload["top_k"] = settings.top_k
        if settings.repetition_penalty != 1.0:
            payload["repetition_penalty"] = settings.repetition_penalty
        if settings.seed is not None:
            payload["seed"] = settings.seed
        if settings.stop:
            payload["stop"] = list(settings.stop)
        if tools:
            payload["tools"] = tools
        if settings.json_schema is not None:  # OpenAI's structured output (vLLM, llama.cpp's server, LocalQwen)
            payload["response_format"] = {"type": "json_schema",
                                          "json_schema": {"name": "reply", "schema": settings.json_schema}}
        if settings.grammar is not None:  # llama.cpp's server reads "grammar" (GBNF)
            payload["grammar"] = settings.grammar
        return payload

    # -- Engine ----------------------------------------------------------------------------
    def count_tokens(self, messages: Messages, tools: Tools | None = None) -> int:
        """Prompt tokens as the server counts them (a one-token completion's usage)."""
        payload = self._payload(messages, tools, GenerationSettings(max_new_tokens=1), stream=False)
        usage = self._json("/chat/completions", payload).get("usage") or {}
        if "prompt_tokens" not in usage:
            raise EngineError(f"{self.base_url} reports no token usage")
        return int(usage["prompt_tokens"])

    def _stream(self, messages: Messages, tools: Tools | None, settings: GenerationSettings,
                cancel: CancelToken | None) -> Iterator[str]:
        stream = ChunkStream(settings.stop)
        with self._completion_request(self._payload(messages, tools, settings, stream=True)) as response:
            yield from stream.read(_server_sent_events(response), cancel)
        if "prompt_tokens" in stream.usage:
            prompt_tokens = int(stream.usage["prompt_tokens"])
        else:  # servers that send no usage while streaming (llama.cpp's) are asked separately
            prompt_tokens = self.count_tokens(messages, tools)
        self.last_result = stream.result(prompt_tokens)


def _server_sent_events(response: Any) -> Iterator[dict[str, Any]]:
    """JSON payloads of ``data:`` lines until ``[DONE]``."""
    for raw in response:
        line = raw.decode("utf-8").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            yield json.loads(data)
        except json.JSONDecodeError as exc:
            raise EngineError(f"the server sent a malformed event: {data[:200]}") from exc
