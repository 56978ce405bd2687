"""Prints a stream of plugin events on the terminal: progress bars, streamed text, tables."""

from __future__ import annotations

import sys
from typing import Any

from localqwen.plugin_api import events as ev

STEP_TEXT_PREFIX = "  │ "


class EventPrinter:
    def __init__(self, as_json: bool = False) -> None:
        from rich.console import Console

        self.as_json = as_json
        self.out = Console(highlight=False)
        self.err = Console(stderr=True, highlight=False)
        self._progress: Any = None
        self._bars: dict[str, Any] = {}
        self._text_open = False
        self._text_step: str | None = None
        self._images: list[ev.Image] = []

    def __call__(self, event: Any) -> None:
        if self.as_json:
            sys.stdout.write(event.to_json() + "\n")
            sys.stdout.flush()
            return
        if isinstance(event, ev.Progress):
            self._show_progress(event)
            return
        if isinstance(event, ev.TextDelta):
            self._stop_progress_if_done()
            self._write_text(event)
            return
        self._end_text()
        if isinstance(event, ev.Step):
            timing = f" ({event.elapsed_s:.2f}s)" if event.elapsed_s is not None else ""
            mark = {"started": "▶", "finished": "✓", "failed": "✗"}[event.status]
            detail = f" {event.detail}" if event.detail else ""
            self.out.print(f"[bold cyan]{mark} {event.title}[/]{timing}{detail}")
        elif isinstance(event, ev.Table):
            from rich.table import Table

            table = Table(*event.columns, title=event.title or None)
            for row in event.rows:
                table.add_row(*(str(cell) for cell in row))
            self.out.print(table)
        elif isinstance(event, ev.Image):
            self._images.append(event)  # a terminal cannot show them: one line for all, at the end
        elif isinstance(event, ev.FileWritten):
            self.out.print(f"[green]wrote[/] {event.path}" + (f"  ({event.description})" if event.description else ""))
        elif isinstance(event, ev.Metric):
            values = "  ".join(f"{k}={v:.4g}" for k, v in event.values.items())
            self.out.print(f"[dim]step {event.step}[/]  {values}")
        elif isinstance(event, ev.ToolCall):
            self.out.print(f"[blue]tool[/] {event.name}({event.arguments})" + (f" -> {event.result}" if event.result else ""))
        elif isinstance(event, ev.Log):
            self.err.print(f"[dim]{event.message}[/]")
        elif isinstance(event, ev.Warning):
            self.err.print(f"[yellow]warning:[/] {event.message}")
        elif isinstance(event, ev.Error):
            where = f" ({event.field})" if event.field else ""
            self.err.print(f"[red]error{where}:[/] {event.message}")
        elif isinstance(event, ev.Done):
            self.close()
            self._print_images()
            colour = {"ok": "green", "failed": "red", "cancelled": "yellow"}[event.status]
            timing = f" in {event.elapsed_s:.1f}s" if event.elapsed_s is not None else ""
            self.err.print(f"[{colour}]{event.status}[/]{timing}" + (f": {event.summary}" if event.summary else ""))

    def _print_images(self) -> None:
        """The run's images as one line: where they are (a gallery is for the TUI and the web view)."""
        from pathlib import Path

        images, self._images = self._images, []
        if len(images) == 1:
            self.out.print(f"[magenta]image:[/] {images[0].path}")
        elif images:
            folders = {str(Path(image.path).parent) for image in images}
            where = folders.pop() if len(folders) == 1 else f"{len(folders)} folders, first {images[0].path}"
            self.out.print(f"[magenta]{len(images)} images:[/] {where}")

    def _show_progress(self, event: ev.Progress) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        if self._progress is None:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=self.err)
            self._progress.start()
        rate = f"{event.rate:.2f} {event.unit}/s" if event.rate else ""
        if event.task not in self._bars:
            self._bars[event.task] = self._progress.add_task(event.message or event.task, total=event.total, rate=rate)
        self._progress.update(self._bars[event.task], completed=event.done, total=event.total,
                              description=event.message or event.task, rate=rate)

    def _stop_progress_if_done(self) -> None:
        if self._progress is not None and all(task.finished for task in self._progress.tasks):
            self.close()

    def _write_text(self, event: ev.TextDelta) -> None:
        """Stream text as it comes; a step panel's text is indented under its step's title."""
        if event.step != self._text_step:
            self._end_text()
            self._text_step = event.step
        prefix = STEP_TEXT_PREFIX if event.step is not None else ""
        for index, line in enumerate(event.text.split("\n")):
            if index:
                sys.stdout.write("\n")
                self._text_open = False
            if line:
                sys.stdout.write(line if self._text_open else prefix + line)
                self._text_open = True
        sys.stdout.flush()

    def _end_text(self) -> None:
        if self._text_open:
            sys.stdout.write("\n")
            self._text_open = False

    def close(self) -> None:
        self._end_text()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._bars.clear()
