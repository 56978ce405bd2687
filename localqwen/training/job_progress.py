"""How a training job reports and stops: the stop flag SIGTERM / SIGINT set, and the trainer callback
that turns the Trainer's logs into ``Metric`` + ``Progress`` events and honours the flag (it saves a
checkpoint and stops after the current step).
"""

from __future__ import annotations

import math
import signal
import time
from typing import Any

from localqwen.training.config import JobConfig
from localqwen.training.event_log import EventSink
from localqwen.vocabulary import events as ev


class StopFlag:
    """Set by SIGTERM / SIGINT (or a caller); the trainer checks it after every step."""

    def __init__(self) -> None:
        self.requested = False
        self.reason = ""

    def request(self, reason: str) -> None:
        self.requested = True
        self.reason = reason

    def install_signal_handlers(self) -> None:
        def handler(signum: int, _frame: Any) -> None:
            self.request(f"stopped by {signal.Signals(signum).name}")

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, handler)


def memory_mb() -> float:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def progress_callback(emit: EventSink, config: JobConfig, stop: StopFlag) -> Any:
    from transformers import TrainerCallback

    batch = config.training.batch_size * config.training.gradient_accumulation

    class ProgressCallback(TrainerCallback):
        """Turns the Trainer's logs into Progress + Metric events and honours the stop flag."""

        def __init__(self) -> None:
            self.last_time = time.monotonic()
            self.last_step = 0
            self.start_time = time.monotonic()
            self.start_step = 0
            self.losses: list[tuple[int, float]] = []

        def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001
            self.start_step = self.last_step = state.global_step
            self.start_time = self.last_time = time.monotonic()
            emit(ev.Log(message=f"training starts at step {state.global_step} of {state.max_steps}"))

        def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
            if stop.requested:
                control.should_save = True
                control.should_training_stop = True
            return control

        def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
            logs = dict(logs or {})
            step = state.global_step
            now = time.monotonic()
            values = {k: float(v) for k, v in logs.items() if isinstance(v, (int, float)) and math.isfinite(float(v))}
            if any(k.startswith("eval_") for k in values):
                emit(ev.Metric(step=step, values=values))
                return
            if "loss" not in values:
                return
            steps_done = step - self.last_step
            elapsed = now - self.last_time
            if steps_done > 0 and elapsed > 0:
                values["samples_per_s"] = steps_done * batch / elapsed
            self.last_step, self.last_time = step, now
            values["memory_mb"] = memory_mb()
            values.pop("total_flos", None)
            self.losses.append((step, values["loss"]))
            emit(ev.Metric(step=step, values=values))
            run_rate = (step - self.start_step) / max(1e-9, now - self.start_time)
            eta = (state.max_steps - step) / run_rate if run_rate > 0 else None
            emit(ev.Progress(done=step, total=state.max_steps, unit="step", rate=run_rate, eta_s=eta,
                             message=f"epoch {values.get('epoch', 0):.2f} loss {values['loss']:.4f}", task="train"))

    return ProgressCallback()
