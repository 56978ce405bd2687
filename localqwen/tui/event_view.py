"""Plugin events -> live widgets: streamed Markdown, step panels, progress bars, images (an image
with a ``key`` replaces the previous one with that key), tables, files, one metric sparkline per
quantity (metric_charts.py), tool calls, warnings and errors.

:meth:`EventView.add_events` is called on the UI thread (the screens forward events from a job's
worker thread with ``call_from_thread``), and renders a batch at a time so fast token streams
don't redraw once per token.
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Collapsible, DataTable, Label, Log, Markdown, ProgressBar, Sparkline, Static

from localqwen.i18n import t
from localqwen.plugin_api import events as ev
from localqwen.tui.widgets.image_block import ImageBlock, file_link
from localqwen.vocabulary.events import format_eta
from localqwen.vocabulary.metric_charts import MetricCharts

METRIC_POINTS = 200  # the sparkline shows the most recent points


def progress_text(event: ev.Progress) -> str:
    parts = []
    if event.total:
        parts.append(f"{event.done:g}/{event.total:g} {event.unit}")
    else:
        parts.append(f"{event.done:g} {event.unit}")
    if event.rate:
        parts.append(f"{event.rate:.2f} {event.unit}/s")
    if event.eta_s is not None:
        parts.append(t("events.eta", eta=format_eta(event.eta_s)))
    return "  ".join(parts)


class ProgressRow(Horizontal):
    DEFAULT_CSS = "ProgressRow { height: 1; } ProgressRow .progress-message { width: 24; } ProgressRow ProgressBar { width: 40; }"

    def __init__(self, task: str) -> None:
        super().__init__(classes="progress-row")
        self.task_name = task
        self._latest: ev.Progress | None = None

    def compose(self) -> ComposeResult:
        yield Label(self.task_name, classes="progress-message")
        yield ProgressBar(show_eta=False, show_percentage=True)
        yield Label("", classes="progress-detail")

    def on_mount(self) -> None:
        if self._latest is not None:
            self.update_from(self._latest)

    def update_from(self, event: ev.Progress) -> None:
        self._latest = event
        if not self.query(".progress-detail"):  # not composed yet: on_mount applies it
            return
        self.query_one(".progress-message", Label).update(event.message or event.task)
        self.query_one(ProgressBar).update(total=event.total, progress=event.done)
        self.query_one(".progress-detail", Label).update(progress_text(event))


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name)


class MetricChart(Vertical):
    """One sparkline per quantity (the losses share one: the training loss is drawn, the held-out
    loss is named in the label), each with its latest values; counters are left out."""

    DEFAULT_CSS = "MetricChart { height: auto; } MetricChart Sparkline { height: 2; }"

    def __init__(self) -> None:
        super().__init__(classes="metric-chart")
        self.charts = MetricCharts()
        self._shown: set[str] = set()

    def add(self, event: ev.Metric) -> None:
        changed = self.charts.add(event)
        order = self.charts.ordered()
        for chart in [name for name in order if name in changed]:  # loss on top, whatever came first
            series = self.charts.charts[chart]
            # The chart's first series is drawn (for loss: the training loss, logged every step).
            points = [value for _step, value in next(iter(series.values()))][-METRIC_POINTS:]
            safe = _safe(chart)
            found = self.query(f"#metric-{safe}")
            if not found:
                # Before the first chart already shown that comes later in the order.
                later = [name for name in order[order.index(chart) + 1:] if name in self._shown]
                anchor = self.query_one(f"#metric-label-{_safe(later[0])}") if later else None
                self.mount(Label("", id=f"metric-label-{safe}", classes="metric-label"), before=anchor)
                self.mount(Sparkline(points, id=f"metric-{safe}"), before=anchor)
                self._shown.add(chart)
            else:
                found.first(Sparkline).data = points
            title, latest = self.charts.title(chart), self.charts.summary(chart)
            # A chart of one series named as the chart ("loss") says its name once.
            shown = latest if latest.startswith(f"{title} ") else f"{title}: {latest}"
            label = f"{shown}  min {min(points):.4g}, max {max(points):.4g}"
            labels = self.query(f"#metric-label-{safe}")
            if labels:
                labels.first(Label).update(label)


class EventView(VerticalScroll):
    """Live output of one run. Keeps the plain text per step so tests and "copy" can read it.

    A chat message uses one as its body (``show_done=False``: the chat screen shows how the answer
    ended in its status line, not under every message)."""

    def __init__(self, *, id: str | None = None, classes: str = "", show_done: bool = True) -> None:
        super().__init__(id=id, classes=f"event-view {classes}".strip())
        self.show_done = show_done
        self.text: dict[str | None, str] = {}
        self.done: ev.Done | None = None
        self.errors: list[str] = []
        self._markdown: dict[str | None, Markdown] = {}
        self._streams: dict[str | None, Any] = {}
        self._steps: dict[str, Collapsible] = {}
        self._step_titles: dict[str, str] = {}
        self._progress: dict[str, ProgressRow] = {}
        self._progress_box: Vertical | None = None
        self._metrics: MetricChart | None = None
        self._log: Log | None = None
        self._images: dict[str, ImageBlock] = {}  # image key -> the block showing it

    def compose(self) -> ComposeResult:
        yield Vertical(id="progress-box", classes="progress-box")

    def on_mount(self) -> None:
        self._progress_box = self.query_one("#progress-box", Vertical)

    async def clear(self) -> None:
        """Forget the previous run's output."""
        for stream in self._streams.values():
            await stream.stop()
        await self.remove_children()
        self.text, self.done, self.errors = {}, None, []
        self._markdown, self._streams, self._steps, self._step_titles, self._progress = {}, {}, {}, {}, {}
        self._metrics = self._log = None
        self._images = {}
        self._progress_box = Vertical(id="progress-box", classes="progress-box")
        await self.mount(self._progress_box)

    async def add_events(self, batch: list[Any]) -> None:
        """Render a batch of events; consecutive text deltas are joined first."""
        if not self.is_attached:  # the screen was closed while its job went on
            return
        pending_text: dict[str | None, list[str]] = {}
        for event in batch:
            if isinstance(event, ev.TextDelta):
                pending_text.setdefault(event.step, []).append(event.text)
                continue
            await self._flush_text(pending_text)
            await self.add_event(event)
        await self._flush_text(pending_text)
        self.scroll_end(animate=False)

    async def _flush_text(self, pending: dict[str | None, list[str]]) -> None:
        for step, parts in pending.items():
            await self._append_text(step, "".join(parts))
        pending.clear()

    async def _append_text(self, step: str | None, text: str) -> None:
        self.text[step] = self.text.get(step, "") + text
        if step not in self._markdown:
            markdown = Markdown("", classes="stream-text")
            self._markdown[step] = markdown
            if step in self._steps:
                await self._steps[step].query_one(Collapsible.Contents).mount(markdown)
            else:
                await self.mount(markdown)
            self._streams[step] = Markdown.get_stream(markdown)
        await self._streams[step].write(text)

    async def add_event(self, event: Any) -> None:
        if isinstance(event, ev.TextDelta):
            await self._append_text(event.step, event.text)
        elif isinstance(event, ev.Progress):
            row = self._progress.get(event.task)
            if row is None:
                row = self._progress[event.task] = ProgressRow(event.task)
                await self._progress_box.mount(row)  # type: ignore[union-attr]
            row.update_from(event)
        elif isinstance(event, ev.Step):
            await self._step(event)
        elif isinstance(event, ev.Image):
            await self._image(event)
        elif isinstance(event, ev.Table):
            await self._table(event)
        elif isinstance(event, ev.Metric):
            if self._metrics is None:
                self._metrics = MetricChart()
                await self.mount(self._metrics)
            self._metrics.add(event)
        elif isinstance(event, ev.ToolCall):
            body = json.dumps(event.arguments, ensure_ascii=False, indent=2)
            if event.result is not None:
                body += f"\n→ {event.result}"
            await self.mount(Collapsible(Static(body, markup=False), title=t("events.tool_call", name=event.name),
                                         collapsed=True, classes="tool-call"))
        elif isinstance(event, ev.FileWritten):
            line = Text("📄 ")
            line.append_text(file_link(event.path))
            if event.description:
                line.append(f"  {event.description}", style="dim")
            await self.mount(Static(line, classes="file-written"))
        elif isinstance(event, ev.Log):
            if self._log is None:
                self._log = Log(classes="event-log", max_lines=2000)
                await self.mount(self._log)
            self._log.write_line(event.message)
        elif isinstance(event, ev.Warning):
            await self.mount(Static(Text(f"⚠ {event.message}"), classes="warning"))
        elif isinstance(event, ev.Error):
            self.errors.append(event.message)
            where = f"{event.field}: " if event.field else ""
            await self.mount(Static(Text(f"✗ {where}{event.message}"), classes="error"))
        elif isinstance(event, ev.Done):
            await self._done(event)

    async def _image(self, event: ev.Image) -> None:
        block = ImageBlock(event.path, event.caption)
        previous = self._images.get(event.key) if event.key else None
        if previous is not None and previous.is_attached:
            await self.mount(block, after=previous)  # the redrawn chart stays where it was
            await previous.remove()
        else:
            await self.mount(block)
        if event.key:
            self._images[event.key] = block

    async def _step(self, event: ev.Step) -> None:
        mark = {"started": "▶", "finished": "✓", "failed": "✗"}[event.status]
        timing = f" ({event.elapsed_s:.2f}s)" if event.elapsed_s is not None else ""
        title = f"{mark} {event.title}{timing}"
        panel = self._steps.get(event.step)
        if panel is None:
            panel = Collapsible(title=title, collapsed=False, classes="step-panel")
            self._steps[event.step] = panel
            await self.mount(panel)
        panel.title = title
        panel.set_class(event.status == "failed", "failed")
        if event.detail:
            await panel.query_one(Collapsible.Contents).mount(Static(Text(event.detail), classes="step-detail"))

    async def _table(self, event: ev.Table) -> None:
        if event.title:
            await self.mount(Label(event.title, classes="table-title"))
        table: DataTable[Any] = DataTable(classes="event-table", zebra_stripes=True)
        await self.mount(table)
        table.add_columns(*event.columns)
        table.add_rows([[str(cell) for cell in row] for row in event.rows])

    async def _done(self, event: ev.Done) -> None:
        self.done = event
        for stream in self._streams.values():
            await stream.stop()
        self._streams.clear()
        self._markdown.clear()  # text after Done (a new run) starts a fresh block
        if not self.show_done:
            return
        timing = f" · {event.elapsed_s:.1f}s" if event.elapsed_s is not None else ""
        label = t(f"status.{event.status}")
        summary = f" — {event.summary}" if event.summary else ""
        await self.mount(Static(Text(f"{label}{timing}{summary}"), classes=f"done {event.status}"))
