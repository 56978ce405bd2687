"""Running a plugin's action or chat turn: validate, iterate its events, always finish with ``Done``.

Every frontend goes through here, so cancellation, error reporting and timing behave the same in
the CLI, the TUI, the web view and the API server.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from localqwen.plugin_api.chat import ChatRequest
from localqwen.plugin_api.context import Context
from localqwen.plugin_api.forms import Form, parse_form
from localqwen.plugin_api.plugin import Action, Plugin
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.finish import finish_once


def run_action(action: Action, values: Form | Mapping[str, Any], ctx: Context) -> Iterator[Any]:
    """Yield the action's events, ending with exactly one ``Done``.

    A form that does not validate raises :class:`FormError` before any work starts, so a
    frontend can show the messages beside the fields. Exceptions inside the action become an
    ``Error`` event plus ``Done(status="failed")``; cancellation becomes ``Done(status="cancelled")``.
    """
    form = values if isinstance(values, Form) else parse_form(action.form, values)
    return announce_models(finish_once(_lazy(lambda: action.run(form, ctx)), ctx.cancel), ctx)


def run_chat(plugin: Plugin, request: ChatRequest, ctx: Context) -> Iterator[Any]:
    """Yield one chat turn's events from the plugin's ``@chat`` responder, ending with one ``Done``."""
    responder = plugin.chat_responder()
    if responder is None:
        raise ValueError(f"plugin '{plugin.id}' offers no chat")
    return announce_models(finish_once(_lazy(lambda: responder(request, ctx)), ctx.cancel), ctx)


def announce_models(stream: Iterator[Any], ctx: Context) -> Iterator[Any]:
    """Say which model (and adapter) is answering: a ``Log`` line as soon as the plugin gets an
    engine from ``ctx.engine`` (before the first event that follows), and ``answered_by`` in the
    final ``Done``'s result, so every frontend shows it without any plugin code."""
    told = 0
    try:
        for event in stream:
            while told < len(ctx.models_used):
                yield ev.Log(message=f"{MODEL_LINE_PREFIX}{ctx.models_used[told]}")
                told += 1
            if isinstance(event, ev.Done) and ctx.models_used and "answered_by" not in event.result:
                answered_by = ", ".join(ctx.models_used)
                event = event.model_copy(update={"result": {**event.result, "answered_by": answered_by}})
            yield event
    finally:
        close = getattr(stream, "close", None)
        if close is not None:  # a caller that stops early stops the plugin too (its finally blocks run)
            close()


# A Log line that starts with this names the model answering; chat views show it in their status line.
MODEL_LINE_PREFIX = "Model: "


def _lazy(start: Any) -> Iterator[Any]:
    # Calling a plain (non-generator) function that raises must still end in Error + Done.
    yield from start()
