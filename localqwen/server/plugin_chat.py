"""A chat completion from a plugin's ``@chat`` responder (``localqwen/<plugin id>``).

The request is transient: the client's messages become one :class:`ChatRequest` (history plus
the last, user, message) run through :func:`run_chat`, and nothing is stored in the app's chat
sessions, as OpenAI's API is stateless. The answer text (``TextDelta`` without a step) is the
message content; every other event the views would show (steps with their text, tool calls,
images, tables, warnings, errors) goes to the ``localqwen_events`` extension field. Usage comes
from the plugin's ``Done`` result when it reports tokens, else counts the streamed text pieces.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.server import shapes
from localqwen.server.errors import ApiError
from localqwen.server.threads import iterate_in_thread
from localqwen.server.wire import saved_image
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import CancelToken

if TYPE_CHECKING:
    from localqwen.app import Workbench


def plugin_messages(messages: list[dict[str, Any]], uploads: Path, max_image_bytes: int) -> list[dict[str, Any]]:
    """Plugins take image files: data-URL images are written to the uploads folder first."""
    if messages[-1]["role"] != "user":
        raise ApiError(400, "a plugin chat answers a user message: the last message must have role 'user'",
                       param="messages")
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            content = [{"type": "image", "image": saved_image(part["image"], uploads, max_image_bytes)}
                       if part["type"] == "image" and part["image"].startswith("data:") else part
                       for part in content]
        out.append({**message, "content": content})
    return out


class PluginTurn:
    def __init__(self, bench: Workbench, served_id: str, plugin_id: str, messages: list[dict[str, Any]]) -> None:
        self.bench = bench
        self.served_id = served_id
        self.plugin_id = plugin_id
        self.messages = messages
        self.cancel = CancelToken()
        self.id = shapes.new_id()

    def _events(self) -> Iterator[Any]:
        from localqwen.plugin_api.chat import ChatRequest
        from localqwen.plugin_api.runner import run_chat

        plugin = self.bench.conversations.plugin(self.plugin_id)
        request = ChatRequest(session_id=0, history=self.messages[:-1], message=self.messages[-1], metadata={})
        yield from run_chat(plugin, request, self.bench.context(self.plugin_id, self.cancel))

    async def stream(self) -> AsyncGenerator[dict[str, Any], None]:
        yield shapes.chunk(self.id, self.served_id, {"role": "assistant", "content": ""})
        pieces = 0
        async with aclosing(iterate_in_thread(self._events, self.cancel)) as items:
            async for event in items:
                if isinstance(event, ev.TextDelta) and event.step is None:
                    pieces += 1
                    yield shapes.chunk(self.id, self.served_id, {"content": event.text})
                elif isinstance(event, ev.Done):
                    if event.status == "failed":
                        raise ApiError(500, f"{self.served_id} failed: {event.summary or 'see localqwen_events'}",
                                       code="plugin_failed")
                    yield shapes.chunk(self.id, self.served_id, {}, "stop", use=_usage(event, pieces))
                else:
                    yield shapes.chunk(self.id, self.served_id, {}, events=[event.model_dump(mode="json")])

    async def complete(self) -> dict[str, Any]:
        from localqwen.plugin_api.chat import TurnRecord

        record = TurnRecord()
        done: ev.Done | None = None
        async with aclosing(iterate_in_thread(self._events, self.cancel)) as items:
            async for event in items:
                record.see(event)
                if isinstance(event, ev.Done):
                    done = event
        assert done is not None  # run_chat always ends with one Done
        # The display list marks where the answer text came with an empty text event; the answer is the content.
        events = [e for e in record.display if not (e.get("kind") == "text" and e.get("step") is None)]
        if done.status == "failed" and not record.text:
            errors = [e.get("message", "") for e in events if e.get("kind") == "error"]
            raise ApiError(500, f"{self.served_id} failed: {errors[-1] if errors else done.summary}",
                           code="plugin_failed")
        message = {"role": "assistant", "content": "".join(record.text)}
        return shapes.completion(self.id, self.served_id, message, "stop", _usage(done, len(record.text)),
                                 events=_jsonable(events))


def _usage(done: ev.Done, pieces: int) -> dict[str, int]:
    result = done.result if isinstance(done.result, dict) else {}
    if "completion_tokens" in result:
        return shapes.usage(int(result.get("prompt_tokens", 0)), int(result["completion_tokens"]))
    return shapes.usage(0, pieces)


def _jsonable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import json

    return json.loads(json.dumps(events, default=str))
