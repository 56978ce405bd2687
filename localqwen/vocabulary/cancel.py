"""Cooperative cancellation shared between a frontend and the work it started."""

from __future__ import annotations

import threading


class Cancelled(Exception):
    """Raised inside work when its token has been cancelled."""


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def cancel(self, reason: str = "cancelled by user") -> None:
        self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled(self.reason)

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, waking early on cancel. True when cancelled."""
        return self._event.wait(timeout)
