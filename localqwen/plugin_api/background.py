"""Long work that reports through a callback, as an action's event stream.

Training loops (vision warm-up, memory consolidation) call ``emit(event)`` as they go; an action is
a generator of events. :func:`events_from_thread` runs the work in a thread and yields what it
emits as it comes, so progress bars move while it runs; the work's result is the generator's
return value (``result = yield from events_from_thread(...)``) and its exception is raised in the
action's own thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator
from typing import Any, TypeVar

T = TypeVar("T")
_END = object()


def events_from_thread(work: Callable[[Callable[[Any], None]], T], *, name: str) -> Generator[Any, None, T]:
    """Run ``work(emit)`` in a daemon thread named ``name``; yield every event it emits."""
    events: queue.Queue[Any] = queue.Queue()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = work(events.put)
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc
        finally:
            events.put(_END)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    while (event := events.get()) is not _END:
        yield event
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]  # type: ignore[no-any-return]
