"""The chat both frontends share: send, stream the answer, regenerate, attach images.

A frontend calls :meth:`ChatController.send` or :meth:`ChatController.regenerate` and renders the
plugin-API events they yield (``TextDelta`` while the engine streams, ``ToolCall`` for each call the
model made, then ``Done``). History goes to SQLite through :class:`ChatHistory` as it happens, so
a stop or a crash keeps what was already said. The engine comes from ``services.engine`` (see the
Engine contract); when none can be loaded the chat says why instead of failing.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.storage.chat_store import ChatHistory, message_images
from localqwen.i18n import t
from localqwen.vocabulary.cancel import CancelToken
from localqwen.vocabulary import events as ev

if TYPE_CHECKING:
    from localqwen.services import Services

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"}
MAX_IMAGE_BYTES = 20 * 1024 * 1024
CHAT_CONFIG_SECTION = "chat"  # [plugins.chat] model = "..." picks the chat model


class ChatController:
    def __init__(self, services: Services, history: ChatHistory | None = None,
                 engine_factory: Callable[[str], Any] | None = None) -> None:
        self.services = services
        self.history = history or ChatHistory(services.database)
        self._engine_factory = engine_factory or self._default_engine

    # -- sessions ---------------------------------------------------------------------------
    def latest_or_new_session(self) -> int:
        sessions = self.history.sessions(limit=1)
        return sessions[0].id if sessions else self.history.create_session()

    def attach_image(self, session_id: int, source: str | Path) -> str:
        """Copy an image into the app's uploads folder and return the copy's path."""
        path = Path(source).expanduser()
        if not path.is_file():
            raise ValueError(t("chat.image_missing", path=str(path)))
        if path.suffix.lower() not in IMAGE_SUFFIXES:
            raise ValueError(t("chat.image_type", suffixes=", ".join(sorted(IMAGE_SUFFIXES))))
        if path.stat().st_size > MAX_IMAGE_BYTES:
            raise ValueError(t("chat.image_too_big", mb=MAX_IMAGE_BYTES // (1024 * 1024)))
        folder = self.services.paths.uploads_dir / "chat" / str(session_id)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{uuid.uuid4().hex[:12]}{path.suffix.lower()}"
        shutil.copyfile(path, target)
        return str(target)

    # -- talking ------------------------------------------------------------------------------
    def send(self, session_id: int, text: str, images: Sequence[str | Path] = (),
             cancel: CancelToken | None = None, settings: Any = None) -> Iterator[Any]:
        """Add the user's message and stream the answer."""
        text = text.strip()
        if not text and not images:
            raise ValueError(t("chat.empty_message"))
        attached = [self.attach_image(session_id, image) for image in images]
        content: str | list[dict[str, Any]] = text
        if attached:
            content = [{"type": "image", "image": image} for image in attached]
            if text:
                content.append({"type": "text", "text": text})
        self.history.append(session_id, {"role": "user", "content": content})
        return self._answer(session_id, cancel or CancelToken(), settings)

    def regenerate(self, session_id: int, cancel: CancelToken | None = None, settings: Any = None) -> Iterator[Any]:
        """Drop everything after the last user message and answer it again."""
        messages = self.history.messages(session_id)
        last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
        if last_user is None:
            raise ValueError(t("chat.nothing_to_regenerate"))
        self.history.truncate(session_id, last_user + 1)
        return self._answer(session_id, cancel or CancelToken(), settings)

    def _answer(self, session_id: int, cancel: CancelToken, settings: Any) -> Iterator[Any]:
        messages = self.history.messages(session_id)
        task = "vision" if any(message_images(m) for m in messages) else "text"
        try:
            engine = self._engine_factory(task)
        except Exception as exc:  # no model yet, no runtime, out of memory...: say it in the chat
            yield ev.Error(message=t("chat.no_engine", reason=f"{type(exc).__name__}: {exc}"))
            yield ev.Done(status="failed", summary=str(exc))
            return
        parts: list[str] = []
        status = "ok"
        summary = ""
        try:
            for delta in engine.stream(messages, settings=settings, cancel=cancel):
                parts.append(delta)
                yield ev.TextDelta(text=delta)
                if cancel.cancelled:
                    status = "cancelled"
                    break
        except Exception as exc:
            if cancel.cancelled:
                status = "cancelled"
            else:
                status, summary = "failed", f"{type(exc).__name__}: {exc}"
                yield ev.Error(message=summary)
        result = getattr(engine, "last_result", None) if status == "ok" else None
        text = getattr(result, "text", None) if result is not None else None
        text = "".join(parts) if text is None else text
        calls = list(getattr(result, "tool_calls", None) or [])
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [
                {"type": "function", "function": {"name": call.name, "arguments": dict(call.arguments)}}
                for call in calls
            ]
        if text or calls:
            self.history.append(session_id, message)
        for call in calls:
            yield ev.ToolCall(name=call.name, arguments=dict(call.arguments))
        usage = {}
        if result is not None:
            usage = {"prompt_tokens": getattr(result, "prompt_tokens", 0),
                     "completion_tokens": getattr(result, "completion_tokens", 0),
                     "finish_reason": getattr(result, "finish_reason", "")}
        yield ev.Done(status=status, summary=summary or (cancel.reason if status == "cancelled" else ""),  # type: ignore[arg-type]
                      result=usage)

    def _default_engine(self, task: str) -> Any:
        factory = getattr(self.services, "engine", None)
        if factory is None:
            raise RuntimeError(t("chat.runtime_missing"))
        model = self.services.config.plugin_section(CHAT_CONFIG_SECTION).get("model") or None
        return factory(model, task=task)
