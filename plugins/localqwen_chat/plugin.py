"""Chat with the configured model: the history goes to the engine, the answer streams back.

This is the plain model chat every frontend opens by default. It is an ordinary plugin with a
``@chat`` responder, so its sessions live in the shared chat store and every chat view renders it.
``[plugins.chat] model = "..."`` picks the model (the Models screen sets it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from localqwen.plugin_api import ChatRequest, Context, Plugin, Requirements, chat
from localqwen.plugin_api import events as ev


class ChatSettings(BaseModel):
    model: str = Field("", description="Model for the chat (catalog id, folder or .gguf); empty = default.")
    max_new_tokens: int = Field(1024, ge=1, le=32768, description="Longest answer, in tokens (the chat views can change it per turn).")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature; 0 = always the likeliest token.")


class ModelChat(Plugin):
    id = "chat"
    title = "Chat"
    description = "Talk to the model, with images when it can see."
    requirements = Requirements(task="text", min_memory_gb=2.0)  # the default 2B model as GGUF Q4_K_M: ~1.9 GB
    config_model = ChatSettings

    @chat
    def respond(self, request: ChatRequest, ctx: Context) -> Iterator[Any]:
        from localqwen.storage.chat_store import message_images

        task = "vision" if any(message_images(m) for m in request.messages) else "text"
        try:
            engine = ctx.engine(task=task)
        except Exception as exc:  # no model yet, out of memory...: say it in the chat, with what to do
            yield ev.Error(message=f"No model could be loaded for the chat: {type(exc).__name__}: {exc}. "
                                   "Pick or download one on the Models screen.")
            yield ev.Done(status="failed", summary=str(exc))
            return
        settings = request.generation_settings(max_new_tokens=int(ctx.settings.get("max_new_tokens", 1024)),
                                               temperature=float(ctx.settings.get("temperature", 0.0)))
        for delta in engine.stream(request.messages, settings=settings, cancel=ctx.cancel):
            yield ev.TextDelta(text=delta)
        result = engine.last_result
        for call in result.tool_calls if result is not None else []:
            yield ev.ToolCall(name=call.name, arguments=dict(call.arguments))
        usage = {}
        if result is not None:
            usage = {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
                     "finish_reason": result.finish_reason}
        yield ev.Done(result=usage)
