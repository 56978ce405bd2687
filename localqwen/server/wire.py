"""OpenAI chat-completion requests to the engine's messages and settings, and results back.

The engine's messages are the chat-template shape (``{"type": "image", "image": ...}`` parts,
tool-call arguments as dicts); OpenAI's carry ``image_url`` parts and JSON-string arguments.
Images are accepted as ``data:`` URLs, or as local paths (plain or ``file://``) inside the allowed
folders; a URL on the network is refused, never fetched.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from localqwen.server.errors import ApiError

ROLES = ("system", "user", "assistant", "tool", "developer")
IMAGE_TYPES = {"image/png": ".png", "image/jpeg": ".jpg", "image/jpg": ".jpg", "image/webp": ".webp",
               "image/gif": ".gif", "image/bmp": ".bmp"}


def engine_messages(raw: Any, allowed_folders: Sequence[Path]) -> list[dict[str, Any]]:
    """The request's ``messages`` in the engine's shape; :class:`ApiError` (400) naming the first problem."""
    if not isinstance(raw, list) or not raw:
        raise ApiError(400, "'messages' must be a non-empty list", param="messages")
    messages = []
    for index, message in enumerate(raw):
        where = f"messages[{index}]"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise ApiError(400, f"{where} needs a 'role' among {', '.join(ROLES)}", param=where)
        role = "system" if message["role"] == "developer" else message["role"]
        out: dict[str, Any] = {"role": role, "content": _content(message.get("content"), where, allowed_folders)}
        if role == "assistant" and message.get("tool_calls"):
            out["tool_calls"] = [_tool_call(call, f"{where}.tool_calls[{n}]")
                                 for n, call in enumerate(message["tool_calls"])]
        if role == "tool":
            if message.get("tool_call_id"):
                out["tool_call_id"] = str(message["tool_call_id"])
            if message.get("name"):
                out["name"] = str(message["name"])
        messages.append(out)
    return messages


def _content(content: Any, where: str, allowed_folders: Sequence[Path]) -> str | list[dict[str, Any]]:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ApiError(400, f"{where}.content must be a string or a list of parts", param=where)
    parts: list[dict[str, Any]] = []
    for n, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            parts.append({"type": "image", "image": image_source(url, f"{where}.content[{n}]", allowed_folders)})
        else:
            raise ApiError(400, f"{where}.content[{n}] has type {kind!r}; this server takes 'text' and 'image_url'",
                           param=where)
    return parts


def image_source(url: Any, where: str, allowed_folders: Sequence[Path]) -> str:
    """A ``data:`` URL as it is, or a checked local path; never a network address."""
    from localqwen.paths import PathOutsideRoot, ensure_within

    if not isinstance(url, str) or not url:
        raise ApiError(400, f"{where}: an image_url needs a 'url'", param=where)
    if url.startswith("data:"):
        header, _, payload = url.partition(",")
        if not header.startswith("data:image/") or ";base64" not in header or not payload:
            raise ApiError(400, f"{where}: a data URL image must be 'data:image/...;base64,...'", param=where)
        return url
    parsed = urlparse(url)
    if parsed.scheme not in ("", "file"):
        raise ApiError(400, f"{where}: images are never fetched from the network; send a data URL "
                            "or a local path inside the allowed folders", param=where, code="image_not_local")
    path = unquote(parsed.path) if parsed.scheme == "file" else url
    try:
        resolved = ensure_within(list(allowed_folders), path)
    except PathOutsideRoot as exc:
        raise ApiError(400, f"{where}: {exc}", param=where, code="image_outside_allowed_folders") from None
    if not resolved.is_file():
        raise ApiError(400, f"{where}: no image at {resolved}", param=where)
    return str(resolved)


def saved_image(data_url: str, folder: Path, max_bytes: int) -> str:
    """Write a data-URL image into ``folder`` (for plugins, which take image files); its path."""
    header, _, payload = data_url.partition(",")
    suffix = IMAGE_TYPES.get(header[5:].split(";")[0].lower())
    if suffix is None:
        raise ApiError(400, f"unsupported image type {header[5:].split(';')[0]!r}; use {', '.join(IMAGE_TYPES)}")
    try:
        data = base64.b64decode(payload, validate=True)
    except ValueError:
        raise ApiError(400, "a data URL image is not valid base64") from None
    if len(data) > max_bytes:
        raise ApiError(400, f"an image is {len(data)} bytes; the limit is {max_bytes}")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{uuid.uuid4().hex[:12]}{suffix}"
    target.write_bytes(data)
    return str(target)


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not function.get("name"):
        raise ApiError(400, f"{where} needs function.name", param=where)
    arguments = function.get("arguments") or {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            raise ApiError(400, f"{where}: function.arguments is not valid JSON", param=where) from None
    out = {"type": "function", "function": {"name": str(function["name"]), "arguments": arguments}}
    if call.get("id"):
        out["id"] = str(call["id"])
    return out


def openai_tool_calls(calls: Sequence[Any], *, streaming: bool = False) -> list[dict[str, Any]]:
    """The engine's :class:`ToolCall` list in OpenAI's shape (ids made here; arguments as JSON strings)."""
    out = []
    for index, call in enumerate(calls):
        entry: dict[str, Any] = {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                                 "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}
        if streaming:
            entry["index"] = index
        out.append(entry)
    return out


def check_tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list) or not all(
            isinstance(tool, dict) and tool.get("type") == "function" and isinstance(tool.get("function"), dict)
            and tool["function"].get("name") for tool in tools):
        raise ApiError(400, "'tools' must be a list of {'type': 'function', 'function': {'name', ...}}", param="tools")
    return tools or None


def response_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema ``response_format`` asks for, or None for plain text.

    OpenAI's ``{"type": "json_schema", "json_schema": {"schema": ...}}``, JSON mode
    ``{"type": "json_object"}`` (any JSON object), and llama-cpp-python's
    ``{"type": "json_object", "schema": ...}``."""
    wanted = body.get("response_format")
    if wanted is None:
        return None
    kind = wanted.get("type") if isinstance(wanted, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        schema = wanted.get("schema") or {"type": "object"}
    elif kind == "json_schema":
        schema = (wanted.get("json_schema") or {}).get("schema")
        if schema is None:
            raise ApiError(400, "'response_format.json_schema.schema' is missing", param="response_format")
    else:
        raise ApiError(400, "'response_format' must be {'type': 'text'}, {'type': 'json_object'} or "
                            "{'type': 'json_schema', 'json_schema': {'schema': ...}}", param="response_format")
    if not isinstance(schema, dict):
        raise ApiError(400, "the response_format schema must be a JSON object", param="response_format")
    return schema


def settings_from(body: dict[str, Any], default_max_tokens: int) -> Any:
    """The engine's ``GenerationSettings`` from OpenAI's sampling fields."""
    from localqwen.runtime.engine import GenerationSettings

    if body.get("n", 1) != 1:
        raise ApiError(400, "this server answers with one choice (n = 1)", param="n")
    stop = body.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise ApiError(400, "'stop' must be a string or a list of strings", param="stop")
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or default_max_tokens
    try:
        return GenerationSettings(
            max_new_tokens=int(max_tokens),
            temperature=float(body["temperature"]) if body.get("temperature") is not None else 0.0,
            top_p=float(body["top_p"]) if body.get("top_p") is not None else 1.0,
            seed=int(body["seed"]) if body.get("seed") is not None else None,
            stop=stop, json_schema=response_schema(body))
    except (TypeError, ValueError) as exc:
        raise ApiError(400, f"bad sampling setting: {exc}") from None
