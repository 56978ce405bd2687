"""A stored chat message turned back into the events that showed it, for every chat view.

Live, a chat view renders the plugin's events as they arrive. A reopened chat has the stored
message (its text, image parts, tool calls) and the events shown beside it (``display``: step
panels, tool calls, images, tables, warnings, errors); :func:`message_events` turns both into the
same events again, so each view has one rendering path for live and reloaded answers. An empty
answer-text event in ``display`` marks where the answer's text came among the blocks; messages
stored before that marker existed show blocks first (an agent works, then answers), warnings and
errors after the text.
"""

from __future__ import annotations

import json
from typing import Any

from localqwen.storage.chat_store import ChatEntry, message_images, message_text
from localqwen.vocabulary import events as ev

_AFTER_TEXT = (ev.Warning, ev.Error)


def message_events(entry: ChatEntry) -> list[Any]:
    """The events that show one stored message again (nothing for a system prompt)."""
    message = entry.message
    role = message.get("role")
    text = message_text(message)
    if role == "system":
        return []
    if role == "tool":
        return [ev.ToolCall(name=str(message.get("name") or "tool"), result=text)]
    images: list[Any] = [ev.Image(path=path) for path in message_images(message)]
    shown = [event for event in (_event(item) for item in entry.display) if event is not None]
    if not shown:  # stored before views kept what they showed: its tool calls at least
        shown = [ev.ToolCall(name=str(call.get("function", {}).get("name", "?")),
                             arguments=dict(call.get("function", {}).get("arguments") or {}))
                 for call in message.get("tool_calls") or []]
    marker = next((i for i, event in enumerate(shown) if _is_answer_marker(event)), None)
    if marker is not None:
        answer = [ev.TextDelta(text=text)] if text else []
        return images + shown[:marker] + answer + shown[marker + 1:]
    before = [event for event in shown if not isinstance(event, _AFTER_TEXT)]
    after = [event for event in shown if isinstance(event, _AFTER_TEXT)]
    return images + before + ([ev.TextDelta(text=text)] if text else []) + after


def _event(item: dict[str, Any]) -> Any:
    try:
        return ev.event_from_json(json.dumps(item))
    except ValueError:  # written by a newer version, or hand-edited: leave it out, keep the rest
        return None


def _is_answer_marker(event: Any) -> bool:
    return isinstance(event, ev.TextDelta) and event.step is None and not event.text
