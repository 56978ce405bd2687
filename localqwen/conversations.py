"""Talking to any plugin that offers a chat: what every chat frontend calls.

``send`` stores the user's message (images copied into the uploads folder), runs the plugin's
``@chat`` responder through :func:`run_chat`, and stores the answer with what the views showed
(tool calls, steps, images), as it ends: a stop or a crash keeps everything said before. The
plugin's session metadata is saved after each turn. The TUI chat screen, the web chat tab and
``localqwen chat`` are views over this object; none of them knows which plugin it talks to.

One turn at a time per session: while a session is answering, a second ``send``, a
``regenerate`` or a ``clear`` of it is refused (:class:`SessionAnswering`). Two browser tabs on
one session, or Enter pressed twice, would otherwise store two questions whose answers land in
whichever order they end, and a clear mid-answer would leave an answer with no question.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.i18n import t
from localqwen.plugin_api import CancelToken, Context, Plugin
from localqwen.plugin_api import events as ev
from localqwen.plugin_api.chat import ImageRejected, answer_stored, attach_image, generation_options
from localqwen.plugin_api.runner import run_chat
from localqwen.storage.chat_store import ChatEntry, ChatSessionInfo, PluginChats

if TYPE_CHECKING:
    from localqwen.plugin_api import PluginHost
    from localqwen.services import Services

DEFAULT_CHAT_PLUGIN = "chat"  # the plain model chat, itself a plugin


class SessionAnswering(ValueError):
    """The session is still answering a turn (a ValueError, so every chat view shows its message)."""


class _Answer(Iterator[Any]):
    """A turn's events. The session counts as answering until its ``Done`` is handed on, the events
    end, the caller closes them, or they are dropped unread (a view that never iterates must not
    lock the session for good). Before ``Done`` is handed on, the rest of the turn runs (answer_stored
    saves the session's metadata after the Done it passes on; nothing follows a Done: run_chat holds
    it back until the responder has ended). So a view that starts the next turn as soon as it shows
    "done" is never refused, and that turn reads the metadata the last one left."""

    def __init__(self, events: Iterator[Any], release: Callable[[], None]) -> None:
        self._events = events
        self._release: Callable[[], None] | None = release

    def __next__(self) -> Any:
        try:
            event = next(self._events)
        except BaseException:  # the end (StopIteration) or a failure: the turn is over either way
            self.close()
            raise
        if isinstance(event, ev.Done):
            try:
                for _ in self._events:  # runs answer_stored's metadata save; no event follows a Done
                    pass
            finally:
                self._free()
        return event

    def _free(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    def close(self) -> None:
        try:
            close = getattr(self._events, "close", None)
            if close is not None:
                close()  # a generator stopped mid-answer stores what was said so far (answer_stored)
        finally:
            self._free()

    def __del__(self) -> None:
        self.close()


class Conversations:
    def __init__(self, host: PluginHost, services: Services,
                 make_context: Callable[[str, CancelToken], Context]) -> None:
        """``make_context(plugin_id, cancel)`` is the app's context factory, so a chat turn sees the
        same typed context (extensions included) as an action."""
        self.host = host
        self.services = services
        self.make_context = make_context

    # -- which plugins chat ---------------------------------------------------------------------
    def plugins(self) -> list[Plugin]:
        """Loaded plugins that offer a chat, the plain model chat first."""
        found = [plugin for plugin in self.host.load_all() if plugin.chats]
        return sorted(found, key=lambda plugin: (plugin.id != DEFAULT_CHAT_PLUGIN, plugin.title.lower()))

    def plugin(self, plugin_id: str) -> Plugin:
        plugin = self.host.get(plugin_id)
        if not plugin.chats:
            chatting = ", ".join(p.id for p in self.plugins()) or "none"
            raise ValueError(t("chat.not_a_chat", plugin=plugin_id, chatting=chatting))
        return plugin

    # -- sessions ------------------------------------------------------------------------------
    def store(self, plugin_id: str) -> PluginChats:
        return self.services.chats.for_plugin(plugin_id)

    def sessions(self, plugin_id: str, limit: int = 50) -> list[ChatSessionInfo]:
        return self.store(plugin_id).sessions(limit)

    def new_session(self, plugin_id: str, title: str = "", metadata: dict[str, Any] | None = None) -> int:
        self.plugin(plugin_id)
        return self.store(plugin_id).create_session(title, metadata=metadata)

    def latest_or_new_session(self, plugin_id: str) -> int:
        self.plugin(plugin_id)
        return self.store(plugin_id).latest_or_new()

    def entries(self, plugin_id: str, session_id: int) -> list[ChatEntry]:
        return self.store(plugin_id).entries(session_id)

    def clear(self, plugin_id: str, session_id: int) -> None:
        """Forget the session's messages (it stays, with its metadata); refused while it answers."""
        store = self.store(plugin_id)
        store.session(session_id)
        with self._claimed(session_id):
            store.truncate(session_id, 0)
        self._release(session_id)

    def answering(self, session_id: int) -> bool:
        """Whether a turn of this session is under way, in this process or another one on the same
        data folder (a chat view's, or a plugin's ask action storing into it: the chat store keeps
        them, as lock files)."""
        return self.services.chats.answering(session_id)

    @contextmanager
    def _claimed(self, session_id: int) -> Iterator[None]:
        """Claim the session's turn for the block; released here only if the block fails (else by
        the turn's :class:`_Answer`, or by the caller)."""
        if not self.services.chats.claim_turn(session_id):
            raise SessionAnswering(t("chat.still_answering"))
        try:
            yield
        except BaseException:
            self._release(session_id)
            raise

    def _release(self, session_id: int) -> None:
        self.services.chats.release_turn(session_id)

    def panel(self, plugin_id: str, session_id: int) -> list[ev.Table]:
        """The plugin's side panel for this session (its ``@chat_panel`` tables), or [] when it has none.

        A panel that fails is shown as one table holding the error, so the chat stays usable."""
        provider = self.plugin(plugin_id).chat_panel_provider()
        if provider is None:
            return []
        metadata = self.store(plugin_id).metadata(session_id)
        try:
            tables = provider(metadata, self.make_context(plugin_id, CancelToken()))
        except Exception as exc:  # a plugin's bug must not take the chat view down with it
            return [ev.Table(title=t("chat.panel_failed"), columns=["error"], rows=[[f"{type(exc).__name__}: {exc}"]])]
        return [table for table in tables if isinstance(table, ev.Table)]

    def attach_image(self, session_id: int, source: str | Path) -> str:
        """Copy an image into the app's uploads folder and return the copy's path."""
        try:
            return attach_image(source, self.services.paths.uploads_dir, session_id)
        except ImageRejected as exc:  # the same refusal, in the user's language
            raise ValueError(t(f"chat.image_{exc.reason}", **exc.detail)) from None

    # -- talking -------------------------------------------------------------------------------
    def send(self, plugin_id: str, session_id: int, text: str, images: Sequence[str | Path] = (),
             cancel: CancelToken | None = None, generation: dict[str, Any] | None = None) -> Iterator[Any]:
        """Store the user's message and stream the plugin's answer (events ending in one ``Done``).

        ``generation`` is the chat view's settings for this turn (max_new_tokens, temperature).
        Bad input (an empty message, a missing or oversized image, another plugin's session, a
        generation setting out of bounds, a session still answering) raises ``ValueError`` /
        ``KeyError`` before anything is stored."""
        plugin = self.plugin(plugin_id)
        store = self.store(plugin_id)
        store.session(session_id)
        generation = generation_options(generation)
        text = text.strip()
        if not text and not images:
            raise ValueError(t("chat.empty_message"))
        with self._claimed(session_id):
            attached = [self.attach_image(session_id, image) for image in images]
            content: str | list[dict[str, Any]] = text
            if attached:
                content = [{"type": "image", "image": image} for image in attached]
                if text:
                    content.append({"type": "text", "text": text})
            store.append(session_id, {"role": "user", "content": content})
            return self._answer(plugin, store, session_id, cancel or CancelToken(), generation)

    def regenerate(self, plugin_id: str, session_id: int, cancel: CancelToken | None = None,
                   generation: dict[str, Any] | None = None) -> Iterator[Any]:
        """Drop everything after the last user message and answer it again."""
        plugin = self.plugin(plugin_id)
        store = self.store(plugin_id)
        generation = generation_options(generation)
        messages = store.messages(session_id)
        last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
        if last_user is None:
            raise ValueError(t("chat.nothing_to_regenerate"))
        with self._claimed(session_id):
            store.truncate(session_id, last_user + 1)
            return self._answer(plugin, store, session_id, cancel or CancelToken(), generation)

    def _answer(self, plugin: Plugin, store: PluginChats, session_id: int, cancel: CancelToken,
                generation: dict[str, Any] | None = None) -> Iterator[Any]:
        """The turn's events; the session (claimed by the caller) is released at their Done (:class:`_Answer`)."""
        ctx = self.make_context(plugin.id, cancel)
        events = answer_stored(store, session_id, lambda request: run_chat(plugin, request, ctx),
                               generation=generation)
        return _Answer(events, lambda: self._release(session_id))
