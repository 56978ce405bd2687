"""A keyboard- and mouse-driven slider (Textual has none built in)."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


class Slider(Widget, can_focus=True):
    """A value between ``minimum`` and ``maximum``, moved by ``step`` with ←/→ or a click."""

    BINDINGS = [
        Binding("left,minus", "move(-1)", "−", show=False),
        Binding("right,plus", "move(1)", "+", show=False),
        Binding("pageup", "move(10)", show=False),
        Binding("pagedown", "move(-10)", show=False),
        Binding("home", "jump(0)", show=False),
        Binding("end", "jump(1)", show=False),
    ]
    DEFAULT_CSS = "Slider { height: 1; width: 1fr; }"

    value: reactive[float] = reactive(0.0)

    class Changed(Message):
        def __init__(self, slider: Slider, value: float) -> None:
            super().__init__()
            self.slider = slider
            self.value = value

    def __init__(self, minimum: float, maximum: float, *, value: float | None = None, step: float | None = None,
                 integer: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.minimum = float(minimum)
        self.maximum = float(maximum)
        self.integer = integer
        self.step = float(step) if step else (1.0 if integer else (self.maximum - self.minimum) / 1000 or 1.0)
        self.set_reactive(Slider.value, self._clamp(self.minimum if value is None else float(value)))

    def _clamp(self, value: float) -> float:
        value = min(self.maximum, max(self.minimum, value))
        steps = round((value - self.minimum) / self.step)
        value = min(self.maximum, self.minimum + steps * self.step)
        return float(round(value)) if self.integer else round(value, 10)

    @property
    def number(self) -> int | float:
        return int(self.value) if self.integer else self.value

    def validate_value(self, value: float) -> float:
        return self._clamp(value)

    def watch_value(self, value: float) -> None:
        self.post_message(self.Changed(self, value))

    def action_move(self, steps: int) -> None:
        self.value = self.value + steps * self.step

    def action_jump(self, where: int) -> None:
        self.value = self.maximum if where else self.minimum

    def _label(self) -> str:
        return str(int(self.value)) if self.integer else f"{self.value:.4g}"

    def render(self) -> Text:
        label = f" {self._label()}"
        width = max(4, self.size.width - len(label) - 1)
        span = self.maximum - self.minimum or 1.0
        knob = round((self.value - self.minimum) / span * (width - 1))
        style = "bold reverse" if self.has_focus else "bold"
        text = Text()
        text.append("━" * knob, style="green")
        text.append("●", style=style)
        text.append("─" * (width - 1 - knob), style="dim")
        text.append(label)
        return text

    def on_click(self, event: events.Click) -> None:
        width = max(4, self.size.width - len(f" {self._label()}") - 1)
        fraction = min(1.0, max(0.0, event.x / max(1, width - 1)))
        self.value = self.minimum + fraction * (self.maximum - self.minimum)
