"""Loss charts of a training job, drawn by the training process itself.

:class:`LossChart` sits in the job's event stream: it passes every event on, keeps the loss
values of ``Metric`` events, and every few seconds draws ``loss_live.png`` and adds an ``Image``
event for it; :meth:`LossChart.final` draws ``loss.png`` at the end. All carry the same ``key``, so
a view shows one chart updated in place. Followers only relay these.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from localqwen.vocabulary import events as ev

CHART_EVERY_S = 5.0
CHART_KEY = "training-loss"


def write_loss_chart(points: list[tuple[int, float]], path: Path, title: str = "training loss") -> Path | None:
    """A PNG of loss over steps (matplotlib, Agg backend); None when there is nothing to draw."""
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.2), dpi=100)
    axes.plot([p[0] for p in points], [p[1] for p in points], color="#3b7dd8")
    axes.set_xlabel("step")
    axes.set_ylabel("loss")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    figure.savefig(tmp)
    plt.close(figure)
    os.replace(tmp, path)  # a view never reads a half-written chart
    return path


class LossChart:
    """An event sink that passes events to ``emit`` and adds live loss charts to the stream."""

    def __init__(self, emit: Callable[[Any], None], output_dir: Path, *, every_s: float = CHART_EVERY_S,
                 earlier: list[tuple[int, float]] | None = None, enabled: bool = True) -> None:
        self.emit = emit
        self.output_dir = output_dir
        self.every_s = every_s
        self.enabled = enabled
        self.points: list[tuple[int, float]] = list(earlier or [])  # a resumed run's chart starts at step 1
        self._last_drawn = time.monotonic()

    def __call__(self, event: Any) -> None:
        self.emit(event)
        if not (self.enabled and isinstance(event, ev.Metric) and "loss" in event.values):
            return
        self.points.append((event.step, event.values["loss"]))
        if time.monotonic() - self._last_drawn >= self.every_s:
            self._draw(self.output_dir / "loss_live.png", f"training loss up to step {event.step}")

    def final(self) -> Path | None:
        """Draw the whole run's ``loss.png`` and add its ``Image`` event."""
        return self._draw(self.output_dir / "loss.png", "training loss") if self.enabled else None

    def _draw(self, path: Path, caption: str) -> Path | None:
        self._last_drawn = time.monotonic()
        chart = write_loss_chart(self.points, path)
        if chart is not None:
            # One key for the live and the final chart: each replaces the previous one in a view.
            self.emit(ev.Image(path=str(chart), caption=caption, key=CHART_KEY))
        return chart
