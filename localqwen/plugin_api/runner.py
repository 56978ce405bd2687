"""Running an action: validate the form, iterate its events, and always finish with ``Done``.

Every frontend goes through :func:`run_action`, so cancellation, error reporting and timing
behave the same in the CLI, the TUI and the web view.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Generator, Iterator, Mapping
from typing import Any, Literal

from localqwen.plugin_api import events as ev
from localqwen.plugin_api.cancel import Cancelled
from localqwen.plugin_api.context import Context
from localqwen.plugin_api.forms import Form, parse_form
from localqwen.plugin_api.plugin import Action


def run_action(action: Action, values: Form | Mapping[str, Any], ctx: Context) -> Iterator[Any]:
    """Yield the action's events, ending with exactly one ``Done``.

    A form that does not validate raises :class:`FormError` before any work starts, so a
    frontend can show the messages beside the fields. Exceptions inside the action become an
    ``Error`` event plus ``Done(status="failed")``; cancellation becomes ``Done(status="cancelled")``.
    """
    form = values if isinstance(values, Form) else parse_form(action.form, values)
    return _iterate(action, form, ctx)


def _iterate(action: Action, form: Form, ctx: Context) -> Iterator[Any]:
    start = time.monotonic()
    generator: Generator[Any, None, None] = action.run(form, ctx)  # type: ignore[assignment]
    status: Literal["ok", "failed", "cancelled"] = "ok"
    result: dict[str, Any] = {}
    summary = ""
    try:
        for event in generator:
            if isinstance(event, ev.Done):
                # The action's own Done carries its result; we add timing and send it last.
                result, summary, status = event.result, event.summary, event.status
                continue
            yield event
            if ctx.cancel.cancelled:
                raise Cancelled(ctx.cancel.reason)
    except Cancelled as exc:
        status, summary = "cancelled", str(exc) or "cancelled"
    except MemoryError:
        status, summary = "failed", "out of memory"
        yield ev.Error(message="Out of memory. Try a smaller model, a lower-bit quantization or a smaller batch.")
    except Exception as exc:
        status = "failed"
        summary = f"{type(exc).__name__}: {exc}"
        yield ev.Error(message=str(exc) or type(exc).__name__, detail=traceback.format_exc())
    finally:
        generator.close()  # runs the action's own cleanup (finally blocks) on cancel or error
    yield ev.Done(status=status, summary=summary, result=result, elapsed_s=time.monotonic() - start)
