"""Plugin events -> what the web view shows: Markdown text with step panels, HTML progress bars
with ETA, an image gallery (an image with a ``key`` replaces the previous one with that key), a
table, downloadable files (a folder is named with its contents, never handed to Gradio as a file),
one chart per metric quantity (metric_charts.py) and messages.

:class:`RunView` is plain Python (it only keeps state and writes strings), so the handlers and
the tests can use it without a browser; :meth:`RunView.updates` turns it into component values.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.i18n import t
from localqwen.jobs import paced
from localqwen.paths import PathOutsideRoot, ensure_within
from localqwen.plugin_api import events as ev
from localqwen.vocabulary.events import format_eta
from localqwen.vocabulary.metric_charts import MetricCharts

if TYPE_CHECKING:
    from localqwen.jobs import Job


@dataclass
class StepPanel:
    """One named stage's panel (a ``Step`` event and its streamed text), for the run and chat views."""

    title: str
    status: str = "started"
    elapsed_s: float | None = None
    detail: str = ""
    text: str = ""

    def apply(self, event: ev.Step) -> None:
        """Take a later ``Step`` event for the same stage: new title and status, timing and detail kept if absent."""
        self.title, self.status = event.title, event.status
        self.elapsed_s = event.elapsed_s if event.elapsed_s is not None else self.elapsed_s
        self.detail = event.detail or self.detail


@dataclass
class RunView:
    """Everything one run has shown so far."""

    allowed_roots: list[Path] = field(default_factory=list)  # files outside them are named, not served
    text: str = ""
    steps: dict[str, StepPanel] = field(default_factory=dict)
    progress: dict[str, ev.Progress] = field(default_factory=dict)
    images: list[tuple[str, str]] = field(default_factory=list)
    tables: list[ev.Table] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # plain files only: gr.File cannot serve a folder
    charts: MetricCharts = field(default_factory=MetricCharts)
    notes: list[str] = field(default_factory=list)  # warnings, errors, tool calls, file names
    logs: list[str] = field(default_factory=list)
    done: ev.Done | None = None
    _image_keys: dict[str, int] = field(default_factory=dict)  # image key -> its place in ``images``
    _plotted: tuple[int, Any] | None = None  # (charts version, figure) last drawn

    def add(self, event: Any) -> None:
        if isinstance(event, ev.TextDelta):
            if event.step and event.step in self.steps:
                self.steps[event.step].text += event.text
            else:
                self.text += event.text
        elif isinstance(event, ev.Progress):
            self.progress[event.task] = event
        elif isinstance(event, ev.Step):
            self.steps.setdefault(event.step, StepPanel(event.title)).apply(event)
        elif isinstance(event, ev.Image):
            if self._servable(event.path):
                self._show_image(event)
            else:
                self.notes.append(f"🖼 `{event.path}` {html.escape(event.caption)}")
        elif isinstance(event, ev.Table):
            self.tables.append(event)
        elif isinstance(event, ev.Metric):
            self.charts.add(event)
        elif isinstance(event, ev.ToolCall):
            body = json.dumps(event.arguments, ensure_ascii=False, indent=2)
            result = f"\n→ {html.escape(event.result)}" if event.result is not None else ""
            self.notes.append(f"<details><summary>🔧 {html.escape(t('events.tool_call', name=event.name))}</summary>"
                              f"\n\n```json\n{body}\n```{result}\n</details>")
        elif isinstance(event, ev.FileWritten):
            description = f" — {html.escape(event.description)}" if event.description else ""
            if Path(event.path).is_dir():
                self.notes.append(f"📁 `{event.path}`{description}{folder_listing(Path(event.path))}")
            else:
                if self._servable(event.path):
                    self.files.append(event.path)
                self.notes.append(f"📄 `{Path(event.path).name}`{description}")
        elif isinstance(event, ev.Log):
            self.logs.append(event.message)
        elif isinstance(event, ev.Warning):
            self.notes.append(f"⚠️ {html.escape(event.message)}")
        elif isinstance(event, ev.Error):
            where = f"**{html.escape(event.field)}**: " if event.field else ""
            self.notes.append(f"❌ {where}{html.escape(event.message)}")
        elif isinstance(event, ev.Done):
            self.done = event

    def _show_image(self, event: ev.Image) -> None:
        if event.key and event.key in self._image_keys:
            self.images[self._image_keys[event.key]] = (event.path, event.caption)
            return
        if event.key:
            self._image_keys[event.key] = len(self.images)
        self.images.append((event.path, event.caption))

    def _servable(self, path: str) -> bool:
        try:
            ensure_within(self.allowed_roots, path)
        except PathOutsideRoot:
            return False
        return Path(path).exists()

    # -- rendering ------------------------------------------------------------------------------
    def markdown(self) -> str:
        parts = []
        for panel in self.steps.values():
            mark = {"started": "⏳", "finished": "✅", "failed": "❌"}[panel.status]
            timing = f" ({panel.elapsed_s:.2f}s)" if panel.elapsed_s is not None else ""
            body = "\n\n".join(x for x in (html.escape(panel.detail), panel.text) if x)
            opened = " open" if panel.status == "started" else ""
            parts.append(f"<details{opened}><summary>{mark} {html.escape(panel.title)}{timing}</summary>\n\n"
                         f"{body}\n\n</details>")
        if self.text:
            parts.append(self.text)
        parts.extend(self.notes)
        if self.logs:
            tail = "\n".join(self.logs[-50:])
            parts.append(f"<details><summary>{t('events.log')} ({len(self.logs)})</summary>\n\n```\n{tail}\n```\n</details>")
        return "\n\n".join(parts)

    def progress_html(self) -> str:
        rows = []
        for event in self.progress.values():
            fraction = event.fraction
            percent = f"{fraction * 100:.0f}%" if fraction is not None else ""
            width = f"{fraction * 100:.1f}%" if fraction is not None else "100%"
            counts = f"{event.done:g}/{event.total:g} {event.unit}" if event.total else f"{event.done:g} {event.unit}"
            rate = f" · {event.rate:.2f} {event.unit}/s" if event.rate else ""
            eta = f" · {t('events.eta', eta=format_eta(event.eta_s))}" if event.eta_s is not None else ""
            rows.append(
                f'<div class="lq-progress" data-task="{html.escape(event.task)}">'
                f'<div class="lq-progress-label">{html.escape(event.message or event.task)} {percent}'
                f' <small>{counts}{rate}{eta}</small></div>'
                f'<div class="lq-progress-track"><div class="lq-progress-fill" style="width:{width}"></div></div></div>'
            )
        return "".join(rows)

    def status(self) -> str:
        if self.done is None:
            return f"⏳ {t('status.running')}" if (self.progress or self.text or self.steps or self.notes) else ""
        mark = {"ok": "✅", "failed": "❌", "cancelled": "⏹"}[self.done.status]
        timing = f" · {self.done.elapsed_s:.1f}s" if self.done.elapsed_s is not None else ""
        summary = f" — {html.escape(self.done.summary)}" if self.done.summary else ""
        return f"{mark} **{t('status.' + self.done.status)}**{timing}{summary}"

    def table_value(self) -> dict[str, Any] | None:
        if not self.tables:
            return None
        last = self.tables[-1]
        return {"headers": list(last.columns), "data": [[_cell(c) for c in row] for row in last.rows]}

    def metrics_figure(self) -> Any:
        """A matplotlib figure with one chart per quantity (None before the first metric); drawn
        again only when a point arrived since the last call."""
        if not self.charts.charts:
            return None
        if self._plotted is not None and self._plotted[0] == self.charts.version:
            return self._plotted[1]
        figure = draw_charts(self.charts)
        self._plotted = (self.charts.version, figure)
        return figure


FOLDER_LISTING = 12  # entries of a written folder named under it


def folder_listing(folder: Path) -> str:
    """A written folder's first entries as a Markdown list (a folder cannot be downloaded as one file)."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return ""
    lines = [f"  - `{e.name}{'/' if e.is_dir() else ''}`" for e in entries[:FOLDER_LISTING]]
    if len(entries) > FOLDER_LISTING:
        lines.append(f"  - … {len(entries) - FOLDER_LISTING} more")
    return "\n" + "\n".join(lines) if lines else ""


def draw_charts(charts: MetricCharts) -> Any:
    """One small line chart per quantity, two per row (matplotlib, Agg: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    names = charts.ordered()
    columns = 2 if len(names) > 1 else 1
    rows = (len(names) + columns - 1) // columns
    figure = Figure(figsize=(4.2 * columns, 2.4 * rows), dpi=90, layout="tight")
    for index, name in enumerate(names):
        axes = figure.add_subplot(rows, columns, index + 1)
        for series, points in charts.charts[name].items():
            style = "o-" if len(points) < 3 else "-"  # a held-out value at one step still shows
            axes.plot([p[0] for p in points], [p[1] for p in points], style, label=series, markersize=3)
        axes.set_title(f"{charts.title(name)}: {charts.summary(name)}", fontsize=8)
        axes.tick_params(labelsize=7)
        axes.grid(alpha=0.3)
        if len(charts.charts[name]) > 1:
            axes.legend(fontsize=7)
    return figure


def _cell(value: Any) -> Any:
    return value if isinstance(value, (int, float, str)) or value is None else str(value)


UPDATE_INTERVAL_S = 0.1  # at most ~10 screen updates a second while a job streams


def follow_job(job: Job, roots: list[Path], frame: Any) -> Iterator[Any]:
    """Yield ``frame(view)`` as the job's events arrive, batching fast streams."""
    view = RunView(allowed_roots=roots)
    for batch in paced(job, UPDATE_INTERVAL_S):
        for event in batch:
            view.add(event)
        yield frame(view)
