"""The web chat: a Chatbot with image attachments, streaming answers, tool calls folded away,
stop / regenerate / clear / copy, and sessions from the SQLite history."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.app import Workbench
from localqwen.storage.chat_store import message_images, message_text
from localqwen.chat_session import ChatController
from localqwen.i18n import t
from localqwen.jobs import paced, run_in_background
from localqwen.paths import ensure_within
from localqwen.plugin_api import CancelToken
from localqwen.plugin_api import events as ev

UPDATE_INTERVAL_S = 0.1


def to_gradio_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-format messages -> Gradio Chatbot messages (images as files, tool calls collapsible)."""
    shown: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            continue
        if role == "tool":
            shown.append({"role": "assistant", "content": message_text(message),
                          "metadata": {"title": "🔧 " + t("chat.tool_result", name=message.get("name", "tool"))}})
            continue
        for image in message_images(message):
            shown.append({"role": role, "content": {"path": image}})
        text = message_text(message)
        if text:
            shown.append({"role": role, "content": text})
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            shown.append(tool_call_message(function.get("name", "?"), function.get("arguments", {})))
    return shown


def tool_call_message(name: str, arguments: dict[str, Any], result: str | None = None) -> dict[str, Any]:
    body = f"```json\n{json.dumps(arguments, ensure_ascii=False, indent=2)}\n```"
    if result is not None:
        body += f"\n\n→ {result}"
    return {"role": "assistant", "content": body,
            "metadata": {"title": "🔧 " + t("events.tool_call", name=name), "status": "done"}}


@dataclass
class ChatTab:
    bench: Workbench
    controller: ChatController
    upload_roots: list[Path] = field(default_factory=list)
    _tokens: dict[int, CancelToken] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def session_choices(self) -> list[tuple[str, int]]:
        return [(f"{info.title or t('chat.untitled')} · {info.message_count}", info.id)
                for info in self.controller.history.sessions()]

    def show(self, session_id: int | None) -> list[dict[str, Any]]:
        return to_gradio_messages(self.controller.history.messages(int(session_id))) if session_id else []

    def new_session(self) -> tuple[Any, list[Any]]:
        import gradio as gr

        session_id = self.controller.history.create_session()
        return gr.update(choices=self.session_choices(), value=session_id), []

    def send(self, value: dict[str, Any] | str | None, session_id: int | None) -> Iterator[tuple[Any, ...]]:
        import gradio as gr

        if isinstance(value, str):
            value = {"text": value, "files": []}
        value = value or {"text": "", "files": []}
        if not session_id:
            session_id = self.controller.history.create_session()
        session_id = int(session_id)
        images = [f if isinstance(f, str) else f.get("path", "") for f in value.get("files") or []]
        token = self._token(session_id)
        try:
            # Only files the browser uploaded (Gradio's upload folder, in the app cache) are accepted.
            images = [str(ensure_within(self.upload_roots, image)) for image in images]
            stream = self.controller.send(session_id, value.get("text") or "", images, cancel=token)
        except ValueError as exc:
            yield self.show(session_id), gr.update(), f"⚠️ {exc}", gr.update()
            return
        sessions = gr.update(choices=self.session_choices(), value=session_id)
        yield from self._stream(session_id, stream, clear_input=True, sessions=sessions)

    def regenerate(self, session_id: int | None) -> Iterator[tuple[Any, ...]]:
        import gradio as gr

        if not session_id:
            yield [], gr.update(), t("chat.nothing_to_regenerate"), gr.update()
            return
        session_id = int(session_id)
        try:
            stream = self.controller.regenerate(session_id, cancel=self._token(session_id))
        except ValueError as exc:
            yield self.show(session_id), gr.update(), f"⚠️ {exc}", gr.update()
            return
        yield from self._stream(session_id, stream, clear_input=False, sessions=gr.update())

    def stop(self, session_id: int | None) -> str:
        token = self._tokens.get(int(session_id)) if session_id else None
        if token is not None:
            token.cancel(t("chat.stopped"))
            return f"⏹ {t('status.cancelled')}"
        return ""

    def clear(self, session_id: int | None) -> tuple[list[Any], str]:
        if session_id:
            self.controller.history.clear(int(session_id))
        return [], ""

    def _token(self, session_id: int) -> CancelToken:
        with self._lock:
            token = self._tokens[session_id] = CancelToken()
            return token

    def _stream(self, session_id: int, stream: Iterator[Any], *, clear_input: bool, sessions: Any
                ) -> Iterator[tuple[Any, ...]]:
        import gradio as gr

        history = self.show(session_id)
        answer = {"role": "assistant", "content": ""}
        extra: list[dict[str, Any]] = []
        status = f"⏳ {t('chat.thinking')}"
        cleared = {"text": "", "files": []} if clear_input else gr.update()
        yield history + [answer], cleared, status, sessions
        # Generate in a thread; repaint at most ten times a second with what has arrived.
        for batch in paced(run_in_background(stream), UPDATE_INTERVAL_S):
            for event in batch:
                if isinstance(event, ev.TextDelta):
                    answer["content"] += event.text
                elif isinstance(event, ev.ToolCall):
                    extra.append(tool_call_message(event.name, event.arguments, event.result))
                elif isinstance(event, ev.Error):
                    extra.append({"role": "assistant", "content": f"❌ {event.message}"})
                elif isinstance(event, ev.Done):
                    status = f"{t('status.' + event.status)}"
                    if event.result.get("completion_tokens"):
                        status += " · " + t("chat.usage", prompt=event.result.get("prompt_tokens", 0),
                                            completion=event.result["completion_tokens"])
            shown = history + ([answer] if answer["content"] else []) + extra
            yield shown, gr.update(), status, gr.update()
        self._tokens.pop(session_id, None)
        yield self.show(session_id) + [m for m in extra if m["content"].startswith("❌")], gr.update(), status, \
            gr.update(choices=self.session_choices(), value=session_id)


def build(bench: Workbench) -> ChatTab:
    import gradio as gr

    from localqwen.web.files import gradio_temp_dir

    tab = ChatTab(bench=bench, controller=ChatController(bench.services),
                  upload_roots=[gradio_temp_dir(bench.paths), bench.paths.uploads_dir])
    first = tab.controller.latest_or_new_session()
    with gr.Row():
        with gr.Column(scale=1, min_width=200):
            sessions = gr.Dropdown(choices=tab.session_choices(), value=first, label=t("chat.sessions"),
                                   elem_id="chat-sessions")
            new = gr.Button(t("chat.new"), elem_id="chat-new")
        with gr.Column(scale=4):
            chatbot = gr.Chatbot(value=tab.show(first), label=t("nav.chat"), height=460, elem_id="chat-log",
                                 buttons=["copy", "copy_all"], group_consecutive_messages=False)
            box = gr.MultimodalTextbox(placeholder=t("chat.placeholder"), file_types=["image"],
                                       file_count="multiple", show_label=False, elem_id="chat-input")
            status = gr.Markdown("", elem_id="chat-status")
            with gr.Row():
                stop = gr.Button(t("chat.stop"), variant="stop", elem_id="chat-stop")
                regenerate = gr.Button(t("chat.regenerate"), elem_id="chat-regenerate")
                clear = gr.Button(t("chat.clear"), elem_id="chat-clear")
    box.submit(tab.send, inputs=[box, sessions], outputs=[chatbot, box, status, sessions], api_name="chat_send",
               concurrency_limit=None)
    regenerate.click(tab.regenerate, inputs=[sessions], outputs=[chatbot, box, status, sessions],
                     api_name="chat_regenerate", concurrency_limit=None)
    stop.click(tab.stop, inputs=[sessions], outputs=[status], api_name="chat_stop", concurrency_limit=None)
    clear.click(tab.clear, inputs=[sessions], outputs=[chatbot, status], api_name="chat_clear")
    new.click(tab.new_session, outputs=[sessions, chatbot], api_name="chat_new")
    sessions.change(tab.show, inputs=[sessions], outputs=[chatbot], api_name="chat_show")
    return tab
