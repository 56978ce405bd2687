"""Chat events -> Gradio Chatbot messages: the answer's text, step panels and tool calls as
collapsible "thoughts", images, tables as Markdown, warnings and errors.

:class:`AnswerMessages` is plain Python (no Gradio import), fed the events of one answer as they
arrive, or the events :func:`localqwen.chat_replay.message_events` rebuilt for a stored message,
so a reopened chat looks like it did live.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.chat_replay import message_events
from localqwen.i18n import t
from localqwen.paths import PathOutsideRoot, ensure_within
from localqwen.plugin_api import events as ev
from localqwen.storage.chat_store import ChatEntry
from localqwen.web.event_renderer import StepPanel

STEP_MARKS = {"started": "⏳", "finished": "✅", "failed": "❌"}


def panel_message(panel: StepPanel) -> dict[str, Any]:
    """A step panel as a collapsible Chatbot "thought"."""
    metadata: dict[str, Any] = {"title": f"{STEP_MARKS[panel.status]} {panel.title}",
                                "status": "pending" if panel.status == "started" else "done"}
    if panel.elapsed_s is not None:
        metadata["duration"] = round(panel.elapsed_s, 2)
    body = "\n\n".join(part for part in (panel.detail, panel.text) if part)
    return {"role": "assistant", "content": body, "metadata": metadata}


@dataclass
class AnswerMessages:
    """One answer as Chatbot messages, each block where it first appeared."""

    allowed_roots: list[Path] = field(default_factory=list)  # images outside them are named, not served
    role: str = "assistant"
    blocks: list[Any] = field(default_factory=list)  # message dicts, step panels and the answer text
    text: str = ""
    done: ev.Done | None = None
    progress: ev.Progress | None = None
    _panels: dict[str, StepPanel] = field(default_factory=dict)
    _text_at: int | None = None

    def add(self, event: Any) -> None:
        if isinstance(event, ev.TextDelta):
            if event.step is not None:
                self._panel(event.step).text += event.text
                return
            if self._text_at is None:
                self._text_at = len(self.blocks)
                self.blocks.append("text")
            self.text += event.text
        elif isinstance(event, ev.Step):
            self._panel(event.step, event.title).apply(event)
        elif isinstance(event, ev.ToolCall):
            self.blocks.append(tool_call_message(event.name, event.arguments, event.result))
        elif isinstance(event, ev.Image):
            self.blocks.append(self._image(event))
        elif isinstance(event, ev.Table):
            self.blocks.append({"role": self.role, "content": table_markdown(event)})
        elif isinstance(event, ev.Warning):
            self.blocks.append({"role": self.role, "content": f"⚠️ {event.message}"})
        elif isinstance(event, ev.Error):
            self.blocks.append({"role": self.role, "content": f"❌ {event.message}"})
        elif isinstance(event, ev.FileWritten):
            self.blocks.append({"role": self.role, "content": f"📄 `{event.path}` {event.description}".rstrip()})
        elif isinstance(event, ev.Progress):
            self.progress = event
        elif isinstance(event, ev.Done):
            self.done = event

    def _panel(self, step: str, title: str = "") -> StepPanel:
        if step not in self._panels:
            self._panels[step] = StepPanel(title or step)
            self.blocks.append(self._panels[step])
        return self._panels[step]

    def _image(self, event: ev.Image) -> dict[str, Any]:
        try:
            ensure_within(self.allowed_roots, event.path)
            servable = Path(event.path).is_file()
        except PathOutsideRoot:
            servable = False
        if servable:
            return {"role": self.role, "content": {"path": event.path, "alt_text": event.caption or None}}
        return {"role": self.role, "content": f"🖼 `{event.path}` {event.caption}".rstrip()}

    def messages(self) -> list[dict[str, Any]]:
        shown = []
        for block in self.blocks:
            if block == "text":
                if self.text:
                    shown.append({"role": self.role, "content": self.text})
            elif isinstance(block, StepPanel):
                shown.append(panel_message(block))
            else:
                shown.append(block)
        return shown


def tool_call_message(name: str, arguments: dict[str, Any], result: str | None = None) -> dict[str, Any]:
    body = f"```json\n{json.dumps(arguments, ensure_ascii=False, indent=2)}\n```"
    if result is not None:
        body += f"\n\n→ {result}"
    return {"role": "assistant", "content": body,
            "metadata": {"title": "🔧 " + t("events.tool_call", name=name), "status": "done"}}


def table_markdown(event: ev.Table) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = [f"**{event.title}**", ""] if event.title else []
    lines.append("| " + " | ".join(cell(c) for c in event.columns) + " |")
    lines.append("|" + "---|" * len(event.columns))
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in event.rows]
    return "\n".join(lines)


def transcript(entries: list[ChatEntry], allowed_roots: list[Path]) -> list[dict[str, Any]]:
    """A stored session as Chatbot messages, each answer with the blocks it showed live."""
    shown: list[dict[str, Any]] = []
    for entry in entries:
        role = "user" if entry.message.get("role") == "user" else "assistant"
        view = AnswerMessages(allowed_roots=allowed_roots, role=role)
        for event in message_events(entry):
            view.add(event)
        shown += view.messages()
    return shown
