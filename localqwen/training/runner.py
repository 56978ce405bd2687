"""The training job that `localqwen train CONFIG` runs (its only entry point).

It loads the base model, applies the method, reads and validates the data (``job_data``,
``job_build``) and runs TRL's SFTTrainer or DPOTrainer (``job_run``). Every event (progress,
metrics, warnings, live loss charts, the final Done) is a JSON line in
``<output_dir>/progress.jsonl`` and, with ``--json``, on stdout (``event_log``, ``loss_chart``).
SIGTERM / SIGINT stop after the current step and save a checkpoint (``job_progress``);
``resume=True`` continues from the last checkpoint exactly (optimizer, scheduler, RNG states and
data position all restored by the Trainer).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from localqwen.storage.file_lock import FileLock
from localqwen.training.config import JobConfig, save_job_config
from localqwen.training.data_sources import DataSources
from localqwen.training.event_log import EventLog, EventSink, is_main_process, read_progress
from localqwen.training.job_build import build_job
from localqwen.training.job_progress import StopFlag
from localqwen.training.job_run import checkpoint_step, latest_checkpoint, train_and_save
from localqwen.training.loss_chart import LossChart
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.finish import finish_once

RUN_LOCK = ".training.lock"  # in the output folder, held while a run writes there


def run_job(config: JobConfig, *, resume: bool = False, echo: EventSink | None = None,
            stop: StopFlag | None = None, data_sources: DataSources | None = None) -> ev.Done:
    """Run the whole job; always ends by logging (and returning) exactly one Done event.

    ``data_sources`` are the generators a ``[data.source]`` may name (``localqwen train`` passes the
    workbench's, plugins' included); None means LocalQwen's built-ins only."""
    stop = stop or StopFlag()
    output = config.output_path
    output.mkdir(parents=True, exist_ok=True)
    main = is_main_process()
    # One run per output folder: a second one (the wizard's Run pressed in two windows, the CLI
    # beside it) would truncate the first's progress log and write over its checkpoints. Refused
    # before anything in the folder is touched; the ranks of one distributed run share it (rank 0 holds it).
    lock = FileLock(output / RUN_LOCK) if main else None
    if lock is not None and not lock.acquire(blocking=False):
        holder = lock.holder()
        refused = ev.Done(status="failed", summary=(
            f"{output} is in use by another training run{f' ({holder})' if holder else ''}: wait for it to "
            "end or stop it, or give this job another output_dir"))
        if echo is not None:
            echo(refused)
        return refused
    try:
        checkpoint = latest_checkpoint(output) if resume else None
        earlier = _losses_before(config, checkpoint) if checkpoint is not None else []
        log = EventLog(config.progress_log, echo, append=resume, enabled=main)
        chart = LossChart(log, output, earlier=earlier, enabled=main)
        done: Any = None
        try:
            for event in finish_once(_job(config, resume, checkpoint, chart, stop, data_sources)):
                chart(event)
                done = event
        finally:
            log.close()
        return done
    finally:
        if lock is not None:
            lock.release()


def _job(config: JobConfig, resume: bool, checkpoint: Any, chart: LossChart, stop: StopFlag,
         data_sources: DataSources | None) -> Iterator[ev.Done]:
    # The Trainer reports through callbacks into ``chart``; this stream yields only the ending.
    from localqwen.training.tracking import finish_swanlab

    output = config.output_path
    save_job_config(config, output / "job.toml")
    if resume and checkpoint is None:
        chart(ev.Warning(message=f"nothing to resume in {output}: starting from the beginning"))
    parts = build_job(config, chart, stop, data_sources=data_sources)
    for note in parts.notes:
        chart(ev.Log(message=note))
    chart(ev.Step(step="train", title="Training"))
    if checkpoint is not None:
        chart(ev.Log(message=f"resuming from {checkpoint.name}"))
    try:
        yield train_and_save(config, parts, checkpoint, chart, stop)
    finally:
        if config.tracking.swanlab != "off":
            finish_swanlab()


def _losses_before(config: JobConfig, checkpoint: Any) -> list[tuple[int, float]]:
    """The interrupted run's losses up to its checkpoint, so a resumed run's chart shows the whole run."""
    upto = checkpoint_step(checkpoint)
    points = {e.step: e.values["loss"] for e in read_progress(config.progress_log)
              if isinstance(e, ev.Metric) and "loss" in e.values and e.step <= upto}
    return sorted(points.items())
