"""Run an event stream in a background thread, ending with exactly one ``Done``.

The stream goes through :func:`localqwen.vocabulary.finish.finish_once`, so an exception, a
cancel or a stream that stops without a ``Done`` all end the same way; each event is handed to
``on_event`` (a job's recorder) in the order it came.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from localqwen.vocabulary.cancel import CancelToken
from localqwen.vocabulary.finish import finish_once


def run_in_thread(make_events: Callable[[], Iterable[Any]], on_event: Callable[[Any], None], *,
                  cancel: CancelToken | None, name: str) -> threading.Thread:
    """Start a daemon thread that feeds ``finish_once(make_events(), cancel)`` to ``on_event``.

    ``make_events`` is called inside the thread, so starting the work never blocks the caller and
    an error while starting it ends the stream like any other error (``Error`` + failed ``Done``).
    """

    def drive() -> None:
        for event in finish_once(_started_in_thread(make_events), cancel):
            on_event(event)

    thread = threading.Thread(target=drive, name=name, daemon=True)
    thread.start()
    return thread


def _started_in_thread(make_events: Callable[[], Iterable[Any]]) -> Iterator[Any]:
    yield from make_events()
