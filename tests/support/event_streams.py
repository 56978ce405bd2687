"""Run a generator that yields events and returns a value (actions, tool loops, jobs) to its end."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any


def drain(stream: Generator[Any, Any, Any]) -> tuple[list[Any], Any]:
    """Every event the stream yields, and the value it returns."""
    events = []
    while True:
        try:
            events.append(next(stream))
        except StopIteration as stop:
            return events, stop.value
