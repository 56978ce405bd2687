"""Waiting in Textual pilot tests: on a state the app reaches, and for a widget to be laid out
before it is clicked. Shared by every TUI test file, so each waits the same way."""

from __future__ import annotations

import time


async def wait_for(pilot, condition, timeout: float = 60.0) -> None:
    """Let the app run until ``condition()`` holds. 60 s: showing the safari model controls once took
    over 30 s with a two-thread bench beside the test run on two cores (10 s alone); the conditions,
    not the time, are what the tests check."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)


async def click_when_laid_out(pilot, selector: str) -> None:
    """Click ``selector`` once it has a place on screen and the layout is settled: a click sent
    right after the state changed (controls shown, frames cleared, a side panel added) could land
    where the widget was before the layout moved it (seen on a loaded machine)."""
    await wait_for(pilot, lambda: bool(pilot.app.screen.query_one(selector).region))
    await pilot.pause()
    await pilot.pause(0.1)
    await pilot.click(selector)
