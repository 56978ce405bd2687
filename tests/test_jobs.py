"""The one job engine: action jobs in a thread, command jobs over JSON lines, records, cancel,
orphans, and exactly one ``Done`` at the end of every stream, however it ends."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from localqwen.app import Workbench
from localqwen.jobs import JobManager, command_events, paced, run_in_background
from localqwen.jobs.store import JobStore
from localqwen.paths import app_paths
from localqwen.plugin_api import FormError
from localqwen.storage.database import Database
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import Cancelled, CancelToken


@pytest.fixture
def jobs(tmp_path) -> JobManager:
    return JobManager(Database(tmp_path / "jobs.sqlite3"), tmp_path / "jobs")


def _dones(events):
    return [e for e in events if isinstance(e, ev.Done)]


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def _wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# -- actions (thread runner) ---------------------------------------------------------------------
def test_action_job_runs_in_background_and_is_recorded(test_plugins):
    bench = Workbench.create()
    jobs = bench.services.jobs
    with pytest.raises(FormError) as error:
        bench.start_action("testplug", "echo", {"repeat": 9})
    assert set(error.value.errors) == {"text", "repeat"}
    job = bench.start_action("testplug", "echo", {"text": "hi", "repeat": 3})
    assert job.wait(10)
    assert job.status == "ok" and job.fraction == 1.0 and job.kind == "action"
    kinds = [e.kind for e in job.events]
    assert kinds.count("text") == 3 and kinds[-1] == "done" and kinds.count("done") == 1
    record = jobs.record(job.id)
    assert record.status == "ok" and record.progress == 1.0 and record.summary == "3 lines"
    assert (record.plugin_id, record.action_id) == ("testplug", "echo") and record.finished_at is not None
    assert [r.id for r in jobs.list()] == [job.id]
    # A new process (a new manager) still lists it and replays its events from the log.
    again = Workbench.create().services.jobs
    assert again.get(job.id) is None
    assert [e.kind for e in again.events(job.id)] == kinds
    assert again.forget_finished() == 1 and again.record(job.id) is None
    assert not Path(record.log_path).exists()


def test_cancel_stops_an_action_job_and_its_cleanup_runs(test_plugins):
    bench = Workbench.create()
    job = bench.start_action("testplug", "slow", {"steps": 500, "delay": 0.02})
    _wait_for(lambda: job.progress)
    assert bench.services.jobs.cancel(job.id)
    assert job.wait(5)
    assert job.status == "cancelled" and len(_dones(job.events)) == 1
    assert bench.services.jobs.record(job.id).status == "cancelled"
    assert not bench.services.jobs.cancel(job.id)  # a finished job cannot be cancelled again
    marker = bench.paths.outputs_dir / "testplug" / "slow.state"
    assert marker.read_text().endswith("cancelled")
    assert int(marker.read_text().split()[0]) < 500


def test_stream_job_reports_errors(jobs):
    def broken(cancel):
        yield ev.Progress(done=1, total=2)
        raise OSError("disk full")

    job = jobs.start_stream("broken download", broken)
    assert job.wait(5) and job.status == "failed"
    assert any(isinstance(e, ev.Error) and "disk full" in e.message for e in job.events)
    assert len(_dones(job.events)) == 1 and job.events[-1].kind == "done"
    assert jobs.record(job.id).status == "failed" and "disk full" in jobs.record(job.id).summary


@pytest.mark.parametrize("ending", ["no done", "own done", "two dones", "raises at start", "cancelled",
                                    "events after done"])
def test_every_stream_ends_with_exactly_one_done(jobs, ending):
    def stream(cancel: CancelToken):
        if ending == "raises at start":
            raise ValueError("bad start")
        yield ev.Log(message="first")
        if ending == "own done":
            yield ev.Done(summary="mine", result={"n": 1})
        elif ending == "two dones":
            yield ev.Done(summary="one")
            yield ev.Done(summary="two")
        elif ending == "cancelled":
            raise Cancelled("stopped here")
        elif ending == "events after done":
            yield ev.Done(summary="early")
            yield ev.Log(message="after")

    job = jobs.start_stream(ending, stream)
    assert job.wait(5)
    logged = jobs.store.read_events(job.log_path)
    for events in (job.events, logged):
        assert len(_dones(events)) == 1 and isinstance(events[-1], ev.Done)
    expected = {"no done": ("ok", ""), "own done": ("ok", "mine"), "two dones": ("ok", "two"),
                "raises at start": ("failed", "ValueError: bad start"), "cancelled": ("cancelled", "stopped here"),
                "events after done": ("ok", "early")}[ending]
    assert (job.status, job.summary) == expected
    if ending == "own done":
        assert job.events[-1].result == {"n": 1}


def test_a_stream_is_stopped_at_its_next_event_after_cancel_and_closed(jobs):
    closed = []

    def endless(cancel):
        try:
            while True:
                yield ev.Progress(done=1, total=None)
                time.sleep(0.01)
        finally:
            closed.append(True)

    job = jobs.start_stream("endless", endless)
    _wait_for(lambda: job.events)
    job.cancel("enough")
    assert job.wait(5) and job.status == "cancelled" and job.summary == "enough"
    assert closed == [True] and len(_dones(job.events)) == 1


def test_run_in_background_is_unrecorded_and_followed_at_the_views_pace(jobs):
    def stream():
        for i in range(5):
            yield ev.TextDelta(text=str(i))
        raise RuntimeError("late failure")

    job = run_in_background(stream())
    batches = list(paced(job, 0.01))
    events = [e for batch in batches for e in batch]
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "01234"
    assert job.status == "failed" and len(_dones(events)) == 1 and events[-1].kind == "done"
    assert jobs.record(job.id) is None


# -- commands (process runner) ------------------------------------------------------------------
def test_command_job_reads_json_lines_and_cancel_terminates(test_plugins):
    bench = Workbench.create()
    jobs = bench.services.jobs
    argv = [sys.executable, "-m", "localqwen.cli.main", "run", "testplug", "slow", "--steps", "400", "--delay",
            "0.02", "--json"]
    job = jobs.start_command(argv, title="slow via CLI")
    assert job.kind == "command" and job.command == argv
    _wait_for(lambda: job.progress or job.finished)
    assert job.progress, [getattr(e, "message", e) for e in job.events]
    job.cancel()
    assert job.wait(15)
    assert job.status == "cancelled" and len(_dones(job.events)) == 1
    assert jobs.record(job.id).status == "cancelled"


def test_command_output_becomes_events_and_the_exit_status_ends_it(jobs):
    mixed = jobs.start_command(_python("""
        print('plain line')
        print('{"kind": "progress", "done": 1, "total": 1}')
    """), title="mixed output")
    assert mixed.wait(15) and mixed.status == "ok"
    assert [e.kind for e in mixed.events] == ["log", "progress", "done"]
    assert mixed.events[0].message == "plain line"

    failing = jobs.start_command(_python("import sys; print('oops', file=sys.stderr); sys.exit(3)"), title="fails")
    assert failing.wait(15) and failing.status == "failed" and "exit code 3" in failing.summary
    assert any(isinstance(e, ev.Log) and e.message == "oops" for e in failing.events)  # stderr joins stdout

    own = jobs.start_command(_python("""
        print('{"kind": "done", "status": "ok", "summary": "did it", "result": {"n": 2}}')
        print('{"kind": "log", "message": "a last word"}')
    """), title="own done")
    assert own.wait(15) and (own.status, own.summary) == ("ok", "did it")
    assert [e.kind for e in own.events] == ["log", "done"] and own.events[-1].result == {"n": 2}

    missing = jobs.start_command(["/no/such/program"], title="cannot start")
    assert missing.wait(15) and missing.status == "failed" and "could not start /no/such/program" in missing.summary
    assert len(_dones(missing.events)) == 1


def test_a_failed_commands_stderr_file_explains_it(tmp_path):
    stderr = tmp_path / "stderr.log"
    events = list(command_events(_python("""
        import sys
        print('{"kind": "log", "message": "working"}')
        print('Traceback: KeyError: lost', file=sys.stderr)
        sys.exit(1)
    """), CancelToken(), stderr_path=stderr))
    assert [e.kind for e in events] == ["log", "done"]
    assert events[-1].status == "failed" and "KeyError: lost" in events[-1].summary
    assert "KeyError: lost" in stderr.read_text()


SHUTS_DOWN_ON_SIGTERM = """
    import json, signal, sys, time
    def stop(signum, frame):
        print(json.dumps({"kind": "log", "message": "saving"}), flush=True)
        print(json.dumps({"kind": "done", "status": "cancelled", "summary": "checkpoint kept",
                          "result": {"checkpoint": "checkpoint-7"}}), flush=True)
        sys.exit(130)
    signal.signal(signal.SIGTERM, stop)
    print(json.dumps({"kind": "progress", "done": 7, "total": 100}), flush=True)
    time.sleep(60)
"""


def test_cancel_sends_sigterm_and_the_commands_own_ending_is_kept(jobs):
    job = jobs.start_command(_python(SHUTS_DOWN_ON_SIGTERM), title="graceful")
    _wait_for(lambda: job.progress)
    started = time.monotonic()
    assert jobs.cancel(job.id)
    assert job.wait(15) and time.monotonic() - started < 5
    # Its Done (with the checkpoint) ends the job; what it printed while stopping is not relayed.
    assert (job.status, job.summary) == ("cancelled", "checkpoint kept")
    assert job.events[-1].result == {"checkpoint": "checkpoint-7"}
    assert [e.kind for e in job.events] == ["progress", "done"]


def test_a_command_that_ignores_sigterm_is_killed_with_its_children_after_the_grace(tmp_path, jobs):
    pid_file = tmp_path / "child.pid"
    stubborn = f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c",
                                  "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print('{{"kind": "progress", "done": 1, "total": 2}}', flush=True)
        time.sleep(60)
    """
    job = jobs.start_command(_python(stubborn), title="stubborn", grace_s=0.5)
    _wait_for(lambda: job.progress and pid_file.exists())
    child = int(pid_file.read_text())
    job.cancel()
    assert job.wait(15) and job.status == "cancelled" and len(_dones(job.events)) == 1
    _wait_for(lambda: not _alive(child), timeout=5)  # SIGKILL went to the whole process group


def test_closing_the_stream_early_stops_the_command(tmp_path):
    marker = tmp_path / "stopped"
    code = f"""
        import signal, sys, time
        def stop(signum, frame):
            open({str(marker)!r}, "w").write("sigterm")
            sys.exit(130)
        signal.signal(signal.SIGTERM, stop)
        print('{{"kind": "log", "message": "hello"}}', flush=True)
        time.sleep(60)
    """
    stream = command_events(_python(code), CancelToken(), grace_s=5)
    assert next(stream).message == "hello"
    stream.close()  # the consumer went away: the command gets SIGTERM and is waited for
    assert marker.read_text() == "sigterm"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, parent gone) counts as stopped
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


# -- records ------------------------------------------------------------------------------------
def test_jobs_left_running_by_a_dead_process_are_marked_interrupted():
    paths = app_paths()
    database = Database(paths.database_file)
    jobs = JobManager(database, paths.runs_dir / "jobs")
    job = jobs.start_stream("orphan", lambda cancel: iter([]))
    assert job.wait(5)
    live = jobs.start_stream("still running here", lambda cancel: _until_cancelled(cancel))
    database.connection.execute("UPDATE jobs SET status = 'running', owner_pid = 999999999 WHERE id = ?", (job.id,))
    JobManager(database, paths.runs_dir / "jobs")
    store = JobStore(database, paths.runs_dir / "jobs")
    assert store.record(job.id).status == "interrupted" and store.record(job.id).finished
    assert store.record(live.id).status == "running"  # its owner (this process) is alive
    live.cancel()
    assert live.wait(5) and store.record(live.id).status == "cancelled"


def _until_cancelled(cancel):
    while not cancel.wait(0.01):
        yield ev.Progress(done=0, total=None)
    yield ev.Log(message="stopping")

