"""``localqwen train CONFIG [--resume] [--estimate-only] [--json]``: run a training job.

The job runs in this process, which alone writes ``<output_dir>/progress.jsonl`` and the loss charts;
the trainer plugin starts this same command with ``--json`` through the job engine's process runner
and relays the events it prints. With several GPUs it re-launches itself under `accelerate launch`
(see ``localqwen.training.launch``), where rank 0 alone speaks for the job.
Exit codes: 0 ok, 1 failed, 2 bad config, 130 cancelled (SIGTERM/Ctrl-C, checkpoint kept).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("train")(train)


def train(
    config_path: Path = typer.Argument(..., metavar="CONFIG", help="Job config (.toml or .yaml)."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the last checkpoint in output_dir."),
    estimate_only: bool = typer.Option(False, "--estimate-only", help="Show the memory and time estimate, then stop."),
    warmup_steps: int = typer.Option(3, "--warmup-steps", help="Steps measured for the time estimate."),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines."),
) -> None:
    """Fine-tune a model as described by CONFIG (see README "Training")."""
    from localqwen.cli.event_printer import EventPrinter
    from localqwen.plugin_api import events as ev
    from localqwen.training.config import JobConfigError, load_job_config

    try:
        config = load_job_config(config_path)
    except JobConfigError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None

    from localqwen.training.event_log import is_main_process

    printer = EventPrinter(as_json=as_json) if is_main_process() else _Quiet()
    try:
        estimate = _show_memory_estimate(config, printer)
        if estimate_only:
            from localqwen.training.estimate import estimate_time

            printer(ev.Log(message=f"measuring {warmup_steps} warm-up steps..."))
            with _probe_config(config, printer) as probe:
                timing = estimate_time(probe, warmup_steps=warmup_steps)
            printer(ev.Table(title="Time estimate", columns=["item", "value"], rows=[
                ["seconds per step", round(timing.seconds_per_step, 3)],
                ["total steps", timing.total_steps],
                ["estimated minutes", round(timing.total_seconds / 60, 2)],
                ["samples per second", round(timing.samples_per_second, 2)],
            ]))
            printer(ev.Done(status="ok" if estimate.fits is not False else "failed", summary="estimate only",
                            result={"memory_gb": estimate.total_gb, "seconds": timing.total_seconds}))
            raise typer.Exit(0 if estimate.fits is not False else 1)
    finally:
        if estimate_only:
            printer.close()

    from localqwen.training.launch import gpu_count, job_command, under_distributed_launcher

    if gpu_count() > 1 and not under_distributed_launcher():
        import subprocess

        command = job_command(config_path.resolve(), resume=resume, json_events=as_json)
        printer(ev.Log(message="several GPUs: " + " ".join(command)))
        printer.close()
        raise typer.Exit(subprocess.call(command))

    from localqwen.training.distributed import leave_process_group, leave_process_group_at_exit
    from localqwen.training.event_log import json_stdout_echo
    from localqwen.training.job_progress import StopFlag
    from localqwen.training.runner import run_job
    from localqwen.vocabulary.exit_codes import exit_code

    leave_process_group_at_exit()  # the Trainer joins the job's process group; nothing else closes it
    data_sources = _data_sources(config, printer)  # before stdout is redirected: its warnings are events
    stop = StopFlag()
    stop.install_signal_handlers()
    echo = json_stdout_echo() if as_json else printer
    try:
        done = run_job(config, resume=resume, echo=echo, stop=stop, data_sources=data_sources)
    finally:
        printer.close()
    leave_process_group()  # under `accelerate launch`: every rank ends the job together
    raise typer.Exit(exit_code(done.status))


def _data_sources(config, printer):  # noqa: ANN001, ANN202
    """The data sources a ``[data.source]`` may name: the built-ins and every plugin's (registered
    through ``Plugin.register``, so this loads the plugins; only done when the job uses a source)."""
    if config.data.source is None:
        return None
    from localqwen.cli.common import workbench
    from localqwen.plugin_api import events as ev

    bench = workbench()
    sources = bench.extensions.data_sources
    for failure in bench.host.failures.values():
        printer(ev.Warning(message=f"plugin '{failure.name}' skipped: {failure.reason}"))
    return sources


@contextmanager
def _probe_config(config, printer):  # noqa: ANN001, ANN202
    """The config the time estimate measures. Its probe job knows only the built-in data sources,
    so a ``[data.source]`` (a plugin's, say) is built here into a scratch folder, removed after, and
    the probe gets the resulting file instead."""
    if config.data.source is None:
        yield config
        return
    import tempfile

    from localqwen.training.data_sources import build_data_source

    source = config.data.source
    with tempfile.TemporaryDirectory(prefix="lq-estimate-data-") as scratch:
        probe = config.model_copy(deep=True)
        probe.data.train = str(build_data_source(_data_sources(config, printer), source.name, scratch,
                                                 **source.options))
        probe.data.source = None
        yield probe


class _Quiet:
    """The printer of a rank other than 0 under `accelerate launch`: rank 0 prints for the whole job."""

    def __call__(self, event: object) -> None:
        pass

    def close(self) -> None:
        pass


def _show_memory_estimate(config, printer):  # noqa: ANN001, ANN202
    from localqwen.plugin_api import events as ev
    from localqwen.training.estimate import estimate_for_job

    estimate = estimate_for_job(config)
    printer(ev.Table(title="Memory estimate", columns=["part", "value"], rows=estimate.as_rows()))
    if estimate.warning:
        printer(ev.Warning(message=estimate.warning))
    return estimate
