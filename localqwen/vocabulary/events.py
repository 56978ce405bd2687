"""Typed events a plugin action yields. Data flows down, events flow up to every frontend.

Each event is a small pydantic model with a ``kind`` tag, so ``--json`` output, the TUI's
messages and the web handlers all speak the same shapes.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, TypeAdapter


class _Event(BaseModel):
    def to_json(self) -> str:
        return self.model_dump_json()


class Progress(_Event):
    kind: Literal["progress"] = "progress"
    done: float
    total: float | None = None
    message: str = ""
    unit: str = "it"
    rate: float | None = None  # units per second
    eta_s: float | None = None
    task: str = "main"  # several progress bars may run at once (e.g. download + caption)

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, max(0.0, self.done / self.total))


class TextDelta(_Event):
    kind: Literal["text"] = "text"
    text: str
    step: str | None = None  # which step panel (see Step) the text belongs to


class Step(_Event):
    """A named stage of work (an agent's turn, a pipeline phase), shown as its own panel."""

    kind: Literal["step"] = "step"
    step: str
    title: str
    status: Literal["started", "finished", "failed"] = "started"
    detail: str = ""
    elapsed_s: float | None = None


class Image(_Event):
    kind: Literal["image"] = "image"
    path: str
    caption: str = ""
    # A stable key: a later image with the same key replaces this one where it is shown (a live
    # chart redrawn every few seconds), instead of piling up. Empty: every image is its own.
    key: str = ""


class Table(_Event):
    kind: Literal["table"] = "table"
    columns: list[str]
    rows: list[list[Any]]
    title: str = ""


class Metric(_Event):
    """Numbers over steps (loss, learning rate...), drawn as live charts."""

    kind: Literal["metric"] = "metric"
    step: int
    values: dict[str, float]


class ToolCall(_Event):
    kind: Literal["tool_call"] = "tool_call"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None


class FileWritten(_Event):
    kind: Literal["file"] = "file"
    path: str
    description: str = ""


class Log(_Event):
    kind: Literal["log"] = "log"
    message: str
    level: Literal["debug", "info"] = "info"


class Warning(_Event):  # noqa: A001 - the event's name is what users see
    kind: Literal["warning"] = "warning"
    message: str


class Error(_Event):
    kind: Literal["error"] = "error"
    message: str
    field: str | None = None  # set for a form field's validation message
    detail: str = ""


class Done(_Event):
    kind: Literal["done"] = "done"
    status: Literal["ok", "failed", "cancelled"] = "ok"
    summary: str = ""
    result: dict[str, Any] = Field(default_factory=dict)
    elapsed_s: float | None = None


Event = Annotated[
    Union[Progress, TextDelta, Step, Image, Table, Metric, ToolCall, FileWritten, Log, Warning, Error, Done],
    Field(discriminator="kind"),
]
_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def event_from_json(text: str) -> Any:
    """Parse one JSON line back into its event (the subprocess job log uses this)."""
    return _EVENT_ADAPTER.validate_json(text)


def format_eta(seconds: float | None) -> str:
    """A short human ETA for progress bars in every frontend: 45s, 3m05s, 1h02m."""
    if seconds is None:
        return ""
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class ProgressTracker:
    """Turns "n of total done" into Progress events with a smoothed rate and an ETA."""

    def __init__(self, total: float | None, *, unit: str = "it", task: str = "main", message: str = "") -> None:
        self.total = total
        self.unit = unit
        self.task = task
        self.message = message
        self.done = 0.0
        self._start = time.monotonic()
        self._rate: float | None = None

    def advance(self, amount: float = 1.0, message: str | None = None) -> Progress:
        return self.update(self.done + amount, message)

    def update(self, done: float, message: str | None = None) -> Progress:
        self.done = done
        if message is not None:
            self.message = message
        elapsed = time.monotonic() - self._start
        if elapsed > 0 and done > 0:
            self._rate = done / elapsed
        eta = None
        if self._rate and self.total is not None:
            eta = max(0.0, (self.total - done) / self._rate)
        return Progress(done=done, total=self.total, message=self.message, unit=self.unit,
                        rate=self._rate, eta_s=eta, task=self.task)
