"""One generation at a time per engine, and a bounded line of requests waiting for it.

A request first takes a ticket (:meth:`EngineQueue.ticket`): when the engine is busy and
``max_waiting`` requests already wait, the ticket is refused at once with 429 and a
``Retry-After`` drawn from how long recent generations took, instead of piling up work the
machine cannot do. The ticket's holder then waits its turn (:meth:`Ticket.turn`) and gives the
ticket back when its response has ended, however it ended (:meth:`Ticket.release` is idempotent).
Everything runs on the event loop's thread, so plain counters are safe.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from localqwen.server.errors import ApiError

RECENT = 8  # generations averaged for Retry-After


class EngineQueue:
    def __init__(self, name: str, max_waiting: int) -> None:
        self.name = name
        self.max_waiting = max_waiting
        self.inside = 0  # generating + waiting
        self.lock = asyncio.Lock()
        self.durations: deque[float] = deque(maxlen=RECENT)

    @property
    def waiting(self) -> int:
        return max(0, self.inside - 1)

    def retry_after(self) -> int:
        """Seconds a refused client should wait: the average recent generation times those ahead of it."""
        average = sum(self.durations) / len(self.durations) if self.durations else 1.0
        return max(1, math.ceil(average * max(1, self.inside)))

    def ticket(self) -> Ticket:
        if self.inside >= 1 + self.max_waiting:
            seconds = self.retry_after()
            raise ApiError(429, f"{self.name} is busy ({self.inside} requests generating or waiting); "
                                f"try again in {seconds} s", code="queue_full",
                           headers={"Retry-After": str(seconds)})
        self.inside += 1
        return Ticket(self)


class Ticket:
    def __init__(self, queue: EngineQueue) -> None:
        self.queue = queue
        self.released = False

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the engine for one generation (waits while another runs)."""
        async with self.queue.lock:
            started = time.monotonic()
            try:
                yield
            finally:
                self.queue.durations.append(time.monotonic() - started)

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.queue.inside -= 1


class Queues:
    """The engine queues by key, made on first use."""

    def __init__(self, max_waiting: int) -> None:
        self.max_waiting = max_waiting
        self.by_key: dict[str, EngineQueue] = {}

    def ticket(self, key: str) -> Ticket:
        queue = self.by_key.get(key)
        if queue is None:
            queue = self.by_key[key] = EngineQueue(key, self.max_waiting)
        return queue.ticket()

    def state(self) -> dict[str, dict[str, int]]:
        return {key: {"generating": min(q.inside, 1), "waiting": q.waiting, "max_waiting": q.max_waiting}
                for key, q in self.by_key.items()}
