"""Chat messages: validation, images, the OpenAI wire shape, and stop strings while streaming."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

ROLES = {"system", "user", "assistant", "tool"}


def check_messages(messages: list[dict[str, Any]], *, allow_images: bool, model_id: str = "") -> None:
    """Raise ``ValueError`` naming the first problem (bad role, bad part, image for a text model)."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ValueError(f"message {index} is {type(message).__name__}, not a dict")
        role = message.get("role")
        if role not in ROLES:
            raise ValueError(f"message {index} has role {role!r}; expected one of {sorted(ROLES)}")
        content = message.get("content", "")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list):
            raise ValueError(f"message {index} content must be a string or a list of parts")
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                continue
            if kind in ("image", "image_url"):
                if not allow_images:
                    raise ValueError(
                        f"message {index} contains an image but {model_id or 'this model'} is text-only; "
                        "use a Qwen3-VL model for images"
                    )
                continue
            raise ValueError(f"message {index} has a content part of type {kind!r}; expected 'text' or 'image'")


def has_images(messages: list[dict[str, Any]]) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") in ("image", "image_url")
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def image_refs(messages: list[dict[str, Any]]) -> list[Any]:
    """Every image reference in order of appearance (path, PIL image or data URL)."""
    refs = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image":
                refs.append(part.get("image"))
            elif isinstance(part, dict) and part.get("type") == "image_url":
                url = part.get("image_url")
                refs.append(url.get("url") if isinstance(url, dict) else url)
    return refs


def load_image(ref: Any) -> PILImage:
    """Open an image given as a PIL image, a path or a ``data:`` URL, converted to RGB."""
    from PIL import Image

    if isinstance(ref, Image.Image):
        return ref.convert("RGB")
    if isinstance(ref, str) and ref.startswith("data:"):
        _, _, payload = ref.partition(",")
        return Image.open(io.BytesIO(base64.b64decode(payload))).convert("RGB")
    if isinstance(ref, (str, Path)):
        path = Path(ref).expanduser()
        if not path.is_file():
            raise ValueError(f"image file not found: {path}")
        try:
            with Image.open(path) as image:
                return image.convert("RGB")
        except OSError as exc:
            raise ValueError(f"cannot read image {path}: {exc}") from exc
    raise ValueError(f"unsupported image reference {type(ref).__name__}; give a path or a PIL image")


def image_data_url(ref: Any) -> str:
    if isinstance(ref, str) and ref.startswith("data:"):
        return ref
    buffer = io.BytesIO()
    load_image(ref).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def with_loaded_images(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy of ``messages`` where every image part holds a PIL image (for HF processors)."""
    result = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") in ("image", "image_url"):
                    ref = part.get("image") if part.get("type") == "image" else image_refs([{"content": [part]}])[0]
                    parts.append({"type": "image", "image": load_image(ref)})
                else:
                    parts.append(part)
            message = {**message, "content": parts}
        result.append(message)
    return result


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The OpenAI chat-completions wire shape: data-URL images, JSON-string tool arguments."""
    result: list[dict[str, Any]] = []
    call_ids: list[str] = []
    for message in messages:
        out: dict[str, Any] = {"role": message["role"]}
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") in ("image", "image_url"):
                    ref = image_refs([{"content": [part]}])[0]
                    parts.append({"type": "image_url", "image_url": {"url": image_data_url(ref)}})
                else:
                    parts.append({"type": "text", "text": part.get("text", "")})
            out["content"] = parts
        else:
            out["content"] = content or ""
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = call.get("function", call)
                arguments = function.get("arguments", {})
                call_id = call.get("id") or f"call_{len(call_ids)}"
                call_ids.append(call_id)
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": function["name"],
                            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                        },
                    }
                )
            out["tool_calls"] = calls
        if message["role"] == "tool":
            out["tool_call_id"] = message.get("tool_call_id") or (call_ids.pop(0) if call_ids else "call_0")
            if message.get("name"):
                out["name"] = message["name"]
        result.append(out)
    return result


class StopScanner:
    """Finds stop strings in streamed text, holding back only a possible stop-string prefix."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = [stop for stop in stops if stop]
        self._text = ""
        self._emitted = 0
        self.stopped = False

    @property
    def text(self) -> str:
        """All accepted text so far (cut at a stop string once one is found)."""
        return self._text

    def feed(self, delta: str) -> str:
        """Add model output; return what is safe to show now."""
        if self.stopped:
            return ""
        self._text += delta
        if not self.stops:
            return self._flush(len(self._text))
        for stop in self.stops:
            at = self._text.find(stop, max(0, self._emitted - len(stop)))
            if at != -1:
                self._text = self._text[:at]
                self.stopped = True
                return self._flush(len(self._text))
        hold = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(self._text)), 0, -1):
                if self._text.endswith(stop[:size]):
                    hold = max(hold, size)
                    break
        return self._flush(len(self._text) - hold)

    def finish(self) -> str:
        """The held-back tail once generation ended without a stop string."""
        return self._flush(len(self._text))

    def _flush(self, upto: int) -> str:
        upto = max(upto, self._emitted)
        out = self._text[self._emitted : upto]
        self._emitted = upto
        return out
