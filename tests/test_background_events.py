"""plugin_api.background: a callback-reporting job as an action's event stream."""

from __future__ import annotations

import threading

import pytest
from event_streams import drain

from localqwen.plugin_api.background import events_from_thread

collect = drain


def test_events_arrive_in_order_and_the_result_is_returned():
    threads = []

    def work(emit):
        threads.append(threading.current_thread().name)
        for step in range(3):
            emit(("step", step))
        return "done"

    events, result = collect(events_from_thread(work, name="job-under-test"))
    assert events == [("step", 0), ("step", 1), ("step", 2)] and result == "done"
    assert threads == ["job-under-test"]  # the work ran in its own thread


def test_the_works_error_is_raised_in_the_callers_thread_after_its_events():
    def work(emit):
        emit("before")
        raise ValueError("out of memory while training")

    stream = events_from_thread(work, name="failing")
    assert next(stream) == "before"
    with pytest.raises(ValueError, match="out of memory while training"):
        next(stream)
