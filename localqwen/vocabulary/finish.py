"""The one wrapper that makes any event stream end with exactly one ``Done``.

Actions, chats, background streams and subprocess jobs all go through :func:`finish_once`, so
cancellation, out-of-memory, errors and timing are reported the same way everywhere.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import Cancelled, CancelToken

OUT_OF_MEMORY = "Out of memory. Try a smaller model, a lower-bit quantization or a smaller batch."


def finish_once(stream: Iterable[Any], cancel: CancelToken | None = None) -> Iterator[Any]:
    """Yield ``stream``'s events, ending with exactly one ``Done``.

    The stream's own ``Done`` carries its status and result; it is held back and sent last with
    the elapsed time. An exception becomes an ``Error`` plus ``Done(status="failed")``;
    ``Cancelled`` (or the token being set) becomes ``Done(status="cancelled")``. The stream is
    closed in every case, so its own ``finally`` blocks run on cancel or error.
    """
    start = time.monotonic()
    status: Literal["ok", "failed", "cancelled"] = "ok"
    result: dict[str, Any] = {}
    summary = ""
    iterator = iter(stream)
    try:
        for event in iterator:
            if isinstance(event, ev.Done):
                result, summary, status = event.result, event.summary, event.status
                continue
            yield event
            if cancel is not None and cancel.cancelled:
                raise Cancelled(cancel.reason)
    except Cancelled as exc:
        status, summary = "cancelled", str(exc) or "cancelled"
    except MemoryError:
        status, summary = "failed", "out of memory"
        yield ev.Error(message=OUT_OF_MEMORY)
    except Exception as exc:
        status = "failed"
        summary = f"{type(exc).__name__}: {exc}"
        yield ev.Error(message=str(exc) or type(exc).__name__, detail=traceback.format_exc())
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
    yield ev.Done(status=status, summary=summary, result=result, elapsed_s=time.monotonic() - start)
