"""Qwen's native tool-call format: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``."""

from __future__ import annotations

import json
import re

from localqwen.runtime.engine.base import ToolCall

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_THINK = re.compile(r"^\s*(?:<think>)?(.*?)</think>\s*", re.DOTALL)


def parse_tool_calls(text: str) -> tuple[str, list[ToolCall]]:
    """Split model output into (text without the call blocks, parsed calls).

    A block whose JSON does not parse or lacks a name stays in the text, so nothing the model
    said is lost. ``arguments`` given as a JSON string is decoded too (some models do that)."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    position = 0
    for match in _BLOCK.finditer(text):
        call = _parse_one(match.group(1))
        if call is None:
            continue
        kept.append(text[position : match.start()])
        position = match.end()
        calls.append(call)
    kept.append(text[position:])
    return "".join(kept).strip() if calls else text, calls


def _parse_one(body: str) -> ToolCall | None:
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = {"value": arguments}
    if not isinstance(arguments, dict):
        arguments = {"value": arguments}
    return ToolCall(name=data["name"], arguments=arguments)


def split_reasoning(text: str) -> tuple[str, str]:
    """Separate a leading ``<think>...</think>`` block (Qwen3 thinking models) from the answer."""
    if "</think>" not in text:
        return "", text
    match = _THINK.match(text)
    if not match:
        return "", text
    return match.group(1).strip(), text[match.end() :]
