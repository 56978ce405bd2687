"""A blocking event stream (an engine's deltas, a plugin's events) read from the event loop.

The stream runs in its own thread and hands each item to the loop. When the reader stops early
(the client disconnected, so Starlette cancelled the response) the stream's ``CancelToken`` is
cancelled and the reader waits, shielded from that cancellation, until the thread has really
ended: the engine is free again before the next request in its queue starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any

from localqwen.vocabulary.cancel import CancelToken

_END = object()


async def iterate_in_thread(make: Callable[[], Iterator[Any]], cancel: CancelToken) -> AsyncGenerator[Any, None]:
    """Yield what ``make()`` yields, produced in a worker thread; its exceptions are raised here."""
    import anyio

    loop = asyncio.get_running_loop()
    items: asyncio.Queue[tuple[Any, Any]] = asyncio.Queue()

    def hand_over(kind: Any, value: Any) -> None:
        # RuntimeError: the loop closed (server shutting down), so nobody is listening.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(items.put_nowait, (kind, value))

    def work() -> None:
        try:
            for item in make():
                hand_over("item", item)
                if cancel.cancelled:
                    break
        except BaseException as exc:  # noqa: BLE001 - re-raised on the loop's side
            hand_over("error", exc)
        finally:
            hand_over(_END, None)

    thread = threading.Thread(target=work, name="localqwen-serve-generation", daemon=True)
    thread.start()
    finished = False
    try:
        while True:
            kind, value = await items.get()
            if kind is _END:
                finished = True
                return
            if kind == "error":
                finished = True
                raise value
            yield value
    finally:
        if not finished:
            cancel.cancel("the client went away")
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(thread.join)
