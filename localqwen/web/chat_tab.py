"""The web chat: talk to any plugin that offers a chat (a picker, the plain model chat first), with
its sessions, streamed answers with step panels and tool calls, images, stop / regenerate / clear.

Everything goes through ``bench.conversations``; nothing here knows which plugin it talks to.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.app import Workbench
from localqwen.i18n import t
from localqwen.jobs import paced, run_in_background
from localqwen.paths import ensure_within
from localqwen.plugin_api import CancelToken
from localqwen.plugin_api import events as ev
from localqwen.plugin_api.runner import MODEL_LINE_PREFIX
from localqwen.web.chat_messages import AnswerMessages, transcript
from localqwen.web.chat_panel import panel_markdown
from localqwen.web.files import allowed_paths

UPDATE_INTERVAL_S = 0.1


@dataclass
class ChatTab:
    bench: Workbench
    upload_roots: list[Path] = field(default_factory=list)  # where the browser's uploads may come from
    _tokens: dict[int, CancelToken] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def conversations(self) -> Any:
        return self.bench.conversations

    # -- what is shown -----------------------------------------------------------------------------
    def plugin_choices(self) -> list[tuple[str, str]]:
        return [(plugin.title, plugin.id) for plugin in self.conversations.plugins()]

    def session_choices(self, plugin_id: str) -> list[tuple[str, int]]:
        return [(f"{info.title or t('chat.untitled')} · {info.message_count}", info.id)
                for info in self.conversations.sessions(plugin_id)]

    def show(self, plugin_id: str | None, session_id: int | None) -> list[dict[str, Any]]:
        if not plugin_id or not session_id:
            return []
        try:
            entries = self.conversations.entries(plugin_id, int(session_id))
        except KeyError:  # a session of another plugin (the picker just changed): nothing to show
            return []
        return transcript(entries, allowed_paths(self.bench.paths))

    def panel(self, plugin_id: str | None, session_id: int | None) -> Any:
        """The plugin's side panel for this session, hidden when the plugin has none."""
        import gradio as gr

        if not plugin_id or not session_id:
            return gr.update(value="", visible=False)
        try:
            text = panel_markdown(self.conversations.panel(plugin_id, int(session_id)))
        except (KeyError, ValueError):  # a session of another plugin (the picker just changed)
            text = ""
        return gr.update(value=text, visible=bool(text))

    # -- plugins and sessions -----------------------------------------------------------------------
    def pick_plugin(self, plugin_id: str | None) -> tuple[Any, list[Any], str]:
        import gradio as gr

        if not plugin_id:
            return gr.update(choices=[], value=None), [], ""
        try:
            session_id = self.conversations.latest_or_new_session(plugin_id)
        except (KeyError, ValueError) as exc:
            return gr.update(choices=[], value=None), [], f"⚠️ {_message(exc)}"
        return (gr.update(choices=self.session_choices(plugin_id), value=session_id),
                self.show(plugin_id, session_id), self.describe(plugin_id))

    def describe(self, plugin_id: str | None) -> str:
        """What the picked plugin does, shown in the status line until the first answer."""
        return self.conversations.plugin(plugin_id).description if plugin_id else f"⚠️ {t('chat.no_plugins')}"

    def new_session(self, plugin_id: str | None) -> tuple[Any, list[Any]]:
        import gradio as gr

        if not plugin_id:
            return gr.update(), []
        session_id = self.conversations.new_session(plugin_id)
        return gr.update(choices=self.session_choices(plugin_id), value=session_id), []

    def clear(self, plugin_id: str | None, session_id: int | None) -> tuple[list[Any], str]:
        if plugin_id and session_id:
            try:
                self.conversations.clear(plugin_id, int(session_id))
            except (ValueError, KeyError) as exc:  # still answering (another tab): nothing is lost
                return self.show(plugin_id, session_id), f"⚠️ {_message(exc)}"
        return [], ""

    # -- talking ----------------------------------------------------------------------------------
    def send(self, value: dict[str, Any] | str | None, plugin_id: str | None, session_id: int | None,
             max_new_tokens: float | None = None, temperature: float | None = None) -> Iterator[tuple[Any, ...]]:
        import gradio as gr

        if isinstance(value, str):
            value = {"text": value, "files": []}
        value = value or {"text": "", "files": []}
        if not plugin_id:
            yield [], gr.update(), f"⚠️ {t('chat.no_plugins')}", gr.update()
            return
        images = [f if isinstance(f, str) else f.get("path", "") for f in value.get("files") or []]
        try:
            if not session_id:
                session_id = self.conversations.latest_or_new_session(plugin_id)
            session_id = int(session_id)
            token = CancelToken()
            # Only files the browser uploaded (Gradio's upload folder, in the app cache) are accepted.
            images = [str(ensure_within(self.upload_roots, image)) for image in images]
            stream = self.conversations.send(plugin_id, session_id, value.get("text") or "", images, cancel=token,
                                             generation=_generation(max_new_tokens, temperature))
            self._register(session_id, token)  # only now: a refused send must not take Stop from the running one
        except (ValueError, KeyError) as exc:
            yield self.show(plugin_id, session_id), gr.update(), f"⚠️ {_message(exc)}", gr.update()
            return
        sessions = gr.update(choices=self.session_choices(plugin_id), value=session_id)
        yield from self._stream(plugin_id, session_id, stream, token, clear_input=True, sessions=sessions)

    def regenerate(self, plugin_id: str | None, session_id: int | None, max_new_tokens: float | None = None,
                   temperature: float | None = None) -> Iterator[tuple[Any, ...]]:
        import gradio as gr

        if not plugin_id or not session_id:
            yield [], gr.update(), t("chat.nothing_to_regenerate"), gr.update()
            return
        session_id = int(session_id)
        token = CancelToken()
        try:
            stream = self.conversations.regenerate(plugin_id, session_id, cancel=token,
                                                   generation=_generation(max_new_tokens, temperature))
            self._register(session_id, token)
        except (ValueError, KeyError) as exc:
            yield self.show(plugin_id, session_id), gr.update(), f"⚠️ {_message(exc)}", gr.update()
            return
        yield from self._stream(plugin_id, session_id, stream, token, clear_input=False, sessions=gr.update())

    def stop(self, session_id: int | None) -> str:
        token = self._tokens.get(int(session_id)) if session_id else None
        if token is not None:
            token.cancel(t("chat.stopped"))
            return f"⏹ {t('status.cancelled')}"
        return ""

    def _register(self, session_id: int, token: CancelToken) -> None:
        """The running turn's token, which Stop cancels (one turn per session: conversations refuses a second)."""
        with self._lock:
            self._tokens[session_id] = token

    def _stream(self, plugin_id: str, session_id: int, stream: Iterator[Any], token: CancelToken, *,
                clear_input: bool, sessions: Any) -> Iterator[tuple[Any, ...]]:
        import gradio as gr

        history = self.show(plugin_id, session_id)  # read before the answer starts, so it is not in it
        job = run_in_background(stream)  # the model starts now, while the page shows the question
        answer = AnswerMessages(allowed_roots=allowed_paths(self.bench.paths))
        cleared = {"text": "", "files": []} if clear_input else gr.update()
        yield history, cleared, f"⏳ {t('chat.thinking')}", sessions
        # Repaint at most ten times a second with what has arrived.
        model = ""
        for batch in paced(job, UPDATE_INTERVAL_S):
            for event in batch:
                if isinstance(event, ev.Log) and event.message.startswith(MODEL_LINE_PREFIX):
                    model = event.message.removeprefix(MODEL_LINE_PREFIX)  # shown in the status line
                answer.add(event)
            yield history + answer.messages(), gr.update(), _status(answer, model), gr.update()
        with self._lock:  # the next turn (begun at this one's Done, say from another tab) keeps its own
            if self._tokens.get(session_id) is token:
                del self._tokens[session_id]
        # The stored answer now carries everything shown; an error shown live stays on screen.
        yield history + answer.messages(), gr.update(), _status(answer), \
            gr.update(choices=self.session_choices(plugin_id), value=session_id)


def _generation(max_new_tokens: float | None, temperature: float | None) -> dict[str, Any]:
    """The chat's generation settings as the conversation checks them (empty = plugin default)."""
    return {"max_new_tokens": max_new_tokens, "temperature": temperature}


def _status(answer: AnswerMessages, model: str = "") -> str:
    done = answer.done
    if done is None:
        progress = answer.progress
        if progress is not None and progress.message:
            return f"⏳ {progress.message}"
        return f"⏳ {t('chat.model_answering', model=model) if model else t('chat.thinking')}"
    status = t(f"status.{done.status}")
    if done.summary and done.status != "ok":
        status += f" — {done.summary}"
    if done.result.get("answered_by"):
        status += " · " + t("chat.answered_by", model=done.result["answered_by"])
    if done.result.get("completion_tokens"):
        status += " · " + t("chat.usage", prompt=done.result.get("prompt_tokens", 0),
                            completion=done.result["completion_tokens"])
    return status


def _message(exc: Exception) -> str:
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def build(bench: Workbench) -> ChatTab:
    import gradio as gr

    from localqwen.web.files import gradio_temp_dir

    tab = ChatTab(bench=bench, upload_roots=[gradio_temp_dir(bench.paths), bench.paths.uploads_dir])
    plugins = tab.plugin_choices()
    plugin_id = plugins[0][1] if plugins else None
    first = bench.conversations.latest_or_new_session(plugin_id) if plugin_id else None
    with gr.Row():
        with gr.Column(scale=1, min_width=200):
            plugin = gr.Dropdown(choices=plugins, value=plugin_id, label=t("chat.plugin"), elem_id="chat-plugin")
            sessions = gr.Dropdown(choices=tab.session_choices(plugin_id) if plugin_id else [], value=first,
                                   label=t("chat.sessions"), elem_id="chat-sessions")
            new = gr.Button(t("chat.new"), elem_id="chat-new")
        with gr.Column(scale=4):
            chatbot = gr.Chatbot(value=tab.show(plugin_id, first), label=t("nav.chat"), height=460,
                                 elem_id="chat-log", buttons=["copy", "copy_all"], group_consecutive_messages=False)
            box = gr.MultimodalTextbox(placeholder=t("chat.placeholder"), file_types=["image"],
                                       file_count="multiple", show_label=False, elem_id="chat-input")
            status = gr.Markdown(tab.describe(plugin_id), elem_id="chat-status")
            with gr.Row():
                stop = gr.Button(t("chat.stop"), variant="stop", elem_id="chat-stop")
                regenerate = gr.Button(t("chat.regenerate"), elem_id="chat-regenerate")
                clear = gr.Button(t("chat.clear"), elem_id="chat-clear")
            # Empty = the plugin's default (the plain chat's [plugins.chat] max_new_tokens, 1024).
            with gr.Accordion(t("chat.generation"), open=False), gr.Row():
                max_tokens = gr.Number(None, label=t("chat.max_tokens"), minimum=1, maximum=32768, precision=0,
                                       placeholder=t("chat.max_tokens_placeholder"), elem_id="chat-max-tokens")
                temperature = gr.Number(None, label=t("chat.temperature"), minimum=0, maximum=2, step=0.1,
                                        placeholder=t("chat.temperature_placeholder"), elem_id="chat-temperature")
        with gr.Column(scale=2, min_width=220):
            shown = panel_markdown(bench.conversations.panel(plugin_id, first)) if plugin_id and first else ""
            panel = gr.Markdown(shown, label=t("chat.panel_title"), elem_id="chat-panel", visible=bool(shown))
    # After anything that changes the session shown or its metadata, the side panel is asked again.
    show_panel = {"fn": tab.panel, "inputs": [plugin, sessions], "outputs": [panel], "api_name": False}
    plugin.input(tab.pick_plugin, inputs=[plugin], outputs=[sessions, chatbot, status],
                 api_name="chat_plugin").then(**show_panel)
    box.submit(tab.send, inputs=[box, plugin, sessions, max_tokens, temperature], outputs=[chatbot, box, status, sessions],
               api_name="chat_send", concurrency_limit=None).then(**show_panel)
    regenerate.click(tab.regenerate, inputs=[plugin, sessions, max_tokens, temperature], outputs=[chatbot, box, status, sessions],
                     api_name="chat_regenerate", concurrency_limit=None).then(**show_panel)
    stop.click(tab.stop, inputs=[sessions], outputs=[status], api_name="chat_stop", concurrency_limit=None)
    clear.click(tab.clear, inputs=[plugin, sessions], outputs=[chatbot, status], api_name="chat_clear").then(**show_panel)
    new.click(tab.new_session, inputs=[plugin], outputs=[sessions, chatbot], api_name="chat_new").then(**show_panel)
    sessions.input(tab.show, inputs=[plugin, sessions], outputs=[chatbot], api_name="chat_show").then(**show_panel)
    return tab
