"""Captioning through the runtime engine: one chat per image, batched with ``chat_batch``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from localqwen_captioner.batch import CaptionFunc
from localqwen_captioner.images import LoadedImage

if TYPE_CHECKING:
    from localqwen.plugin_api import CancelToken

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


def caption_messages(image: Any, prompt: str) -> list[dict[str, Any]]:
    """The chat for one image: a user turn with the image and the prompt (contract chat format)."""
    return [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": prompt}]}]


def clean_caption(text: str) -> str:
    """Drop a thinking block (Qwen3-VL "Thinking" models) and surrounding whitespace."""
    return _THINK.sub("", text).replace("<think>", "").replace("</think>", "").strip()


def engine_captioner(engine: Any, prompt: str, *, max_new_tokens: int = 64,
                     cancel: CancelToken | None = None) -> CaptionFunc:
    """A :data:`CaptionFunc` that asks ``engine`` (greedy decoding) for one caption per image."""
    from localqwen.runtime.engine import GenerationSettings

    settings = GenerationSettings(max_new_tokens=max_new_tokens, temperature=0.0)

    def caption(images: Sequence[LoadedImage]) -> list[str]:
        conversations = [caption_messages(item.image, prompt) for item in images]
        if len(conversations) == 1:
            results = [engine.chat(conversations[0], settings=settings, cancel=cancel)]
        else:
            results = engine.chat_batch(conversations, settings=settings, cancel=cancel)
        return [clean_caption(result.text) for result in results]

    return caption
