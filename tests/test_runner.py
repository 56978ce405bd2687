import threading
from pathlib import Path

import pytest

from localqwen.app import Workbench
from localqwen.plugin_api import CancelToken, FormError
from localqwen.plugin_api import events as ev


@pytest.fixture
def bench(test_plugins):
    return Workbench.create()


def test_echo_streams_every_event_kind_and_ends_with_done(bench):
    events = list(bench.run("testplug", "echo", {"text": "hello", "repeat": 3, "style": "stars"}))
    kinds = [e.kind for e in events]
    assert kinds.count("text") == 3 and kinds.count("progress") == 3
    assert kinds[-1] == "done" and kinds.count("done") == 1
    done = events[-1]
    assert done.status == "ok" and done.result["lines"] == ["* hello *"] * 3
    progress = [e for e in events if isinstance(e, ev.Progress)]
    assert progress[-1].done == 3 and progress[-1].total == 3 and progress[-1].eta_s == 0
    written = next(e for e in events if isinstance(e, ev.FileWritten))
    assert Path(written.path).read_text().count("hello") == 3


def test_invalid_form_raises_before_running(bench):
    with pytest.raises(FormError) as info:
        bench.run("testplug", "echo", {"repeat": 0})
    assert set(info.value.errors) == {"text", "repeat"}


def test_exception_becomes_error_then_failed_done(bench):
    events = list(bench.run("testplug", "fail", {"message": "disk on fire"}))
    assert isinstance(events[0], ev.Log)
    assert isinstance(events[1], ev.Error) and events[1].message == "disk on fire"
    assert events[-1].status == "failed" and "disk on fire" in events[-1].summary


def test_cancel_stops_work_and_runs_cleanup(bench):
    cancel = CancelToken()
    stream = bench.run("testplug", "slow", {"steps": 1000, "delay": 0.01}, cancel=cancel)
    seen = []
    for event in stream:
        seen.append(event)
        if len(seen) == 5:
            threading.Timer(0.0, cancel.cancel).start()
    assert seen[-1].status == "cancelled"
    state = (bench.paths.outputs_dir / "testplug" / "slow.state").read_text()
    assert state.endswith("cancelled") and int(state.split()[0]) < 1000


def test_events_round_trip_through_json():
    event = ev.Table(columns=["a"], rows=[[1]], title="t")
    assert ev.event_from_json(event.to_json()) == event
