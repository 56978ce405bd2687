"""Which chart each metric belongs to, so every frontend draws one chart per quantity that matters.

A training job reports ten numbers per step (loss, learning rate, token counts, memory...). Drawn
on one axis, loss is a flat line under ``num_tokens``; drawn one per series, ten small charts hide
the one that matters. Here the losses (train and held-out) share a chart, each other quantity that
says something about the run has its own, and bookkeeping counters are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from localqwen.vocabulary import events as ev

# Counters and timings that say nothing about how the run goes.
HIDDEN = {"epoch", "num_tokens", "total_flos", "step", "entropy", "train_runtime", "train_samples_per_second",
          "train_steps_per_second", "eval_runtime", "eval_samples_per_second", "eval_steps_per_second",
          "eval_num_tokens", "eval_entropy"}
TITLES = {"loss": "loss", "mean_token_accuracy": "token accuracy", "learning_rate": "learning rate",
          "grad_norm": "gradient norm", "samples_per_s": "samples per second", "memory_mb": "memory (MB)"}
ORDER = list(TITLES)


def chart_of(series: str) -> str | None:
    """The chart a metric series is drawn in, or None when it is left out."""
    if series in HIDDEN:
        return None
    if series == "loss" or series.endswith("_loss"):
        return "loss"
    if series.startswith("eval_"):  # held-out numbers share the chart of their training counterpart
        return series.removeprefix("eval_")
    return series


@dataclass
class MetricCharts:
    """The points of every chart, gathered from ``Metric`` events: chart -> series -> [(step, value)]."""

    charts: dict[str, dict[str, list[tuple[int, float]]]] = field(default_factory=dict)
    version: int = 0  # grows with every point, so a view redraws only when something changed

    def add(self, event: ev.Metric) -> set[str]:
        """Take one event; returns the charts it changed."""
        changed = set()
        for name, value in event.values.items():
            chart = chart_of(name)
            if chart is None:
                continue
            self.charts.setdefault(chart, {}).setdefault(name, []).append((event.step, float(value)))
            changed.add(chart)
        if changed:
            self.version += 1
        return changed

    def ordered(self) -> list[str]:
        """The charts, the known quantities first (loss on top), then others as they came."""
        known = [name for name in ORDER if name in self.charts]
        return known + [name for name in self.charts if name not in TITLES]

    @staticmethod
    def title(chart: str) -> str:
        return TITLES.get(chart, chart.replace("_", " "))

    def summary(self, chart: str) -> str:
        """The latest value of each series in ``chart``, e.g. ``loss 0.412 · eval_loss 0.530 (step 40)``."""
        parts = []
        last_step = 0
        for name, points in self.charts.get(chart, {}).items():
            step, value = points[-1]
            last_step = max(last_step, step)
            parts.append(f"{name} {value:.4g}")
        return " · ".join(parts) + f" (step {last_step})"
