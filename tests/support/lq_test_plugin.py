"""A test-only plugin, registered through a real entry point by the ``test_plugins`` fixture.

It exercises the whole plugin path: every widget kind, validation, each event type,
cancellation, and failure.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from localqwen.plugin_api import Context, Form, Plugin, Requirements, action, field
from localqwen.plugin_api import events as ev


class EchoForm(Form):
    text: str = field(label="Text", help="What to echo back.", widget="textarea")
    repeat: int = field(2, label="Repeat", ge=1, le=5, help="How many times.")
    shout: bool = field(False, label="Shout", help="Upper-case the output.")
    style: Literal["plain", "stars"] = field("plain", label="Style")
    note_file: Path | None = field(None, label="Note file", widget="file", advanced=True)


class SlowForm(Form):
    steps: int = field(50, label="Steps", ge=1, le=10_000)
    delay: float = field(0.05, label="Delay per step (s)", ge=0, le=5)


class FailForm(Form):
    message: str = field("kaboom", label="Message")


class EchoPlugin(Plugin):
    id = "testplug"
    title = "Test plugin"
    description = "Echoes text; used by the test suite."
    requirements = Requirements(task="none")

    @action(form=EchoForm, title="Echo", description="Echo text with progress.")
    def echo(self, form: EchoForm, ctx: Context):
        tracker = ev.ProgressTracker(form.repeat, unit="line", message="echoing")
        lines = []
        for _ in range(form.repeat):
            line = form.text.upper() if form.shout else form.text
            if form.style == "stars":
                line = f"* {line} *"
            lines.append(line)
            yield ev.TextDelta(text=line + "\n")
            yield tracker.advance()
        yield ev.Table(columns=["n", "line"], rows=[[i, line] for i, line in enumerate(lines)], title="lines")
        out = ctx.outputs_dir / "echo.txt"
        out.write_text("\n".join(lines), encoding="utf-8")
        yield ev.FileWritten(path=str(out), description="echoed lines")
        yield ev.Done(result={"lines": lines}, summary=f"{len(lines)} lines")

    @action(form=SlowForm, title="Slow", description="Counts slowly; for cancel tests.")
    def slow(self, form: SlowForm, ctx: Context):
        tracker = ev.ProgressTracker(form.steps, unit="step", message="counting")
        marker = ctx.outputs_dir / "slow.state"
        try:
            for step in range(form.steps):
                ctx.cancel.raise_if_cancelled()
                if ctx.cancel.wait(form.delay):
                    ctx.cancel.raise_if_cancelled()
                marker.write_text(str(step + 1))
                yield tracker.advance()
            yield ev.Done(result={"steps": form.steps})
        finally:
            # Proves cleanup runs on cancel: the marker records how it ended.
            marker.write_text(marker.read_text() + (" cancelled" if ctx.cancel.cancelled else " finished")
                              if marker.exists() else "none")

    @action(form=FailForm, title="Fail", description="Raises an error after one event.")
    def fail(self, form: FailForm, ctx: Context):
        yield ev.Log(message="about to fail")
        time.sleep(0)
        raise RuntimeError(form.message)


class BrokenAtRegistration(Plugin):
    id = "broken_register"
    title = "Broken"

    def __init__(self) -> None:
        raise RuntimeError("cannot start: missing frobnicator")
