"""The training job: `localqwen train CONFIG` (or `python -m localqwen.training.runner CONFIG`).

It loads the base model, applies the method, reads and validates the data, and runs TRL's
SFTTrainer or DPOTrainer. Every event (progress, metrics, warnings, the final Done) is a JSON line
in ``<output_dir>/progress.jsonl`` that the UIs tail. SIGTERM / SIGINT stop after the current step
and save a checkpoint; ``resume=True`` continues from the last checkpoint exactly (optimizer,
scheduler, RNG states and data position all restored by the Trainer).
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.vocabulary import events as ev
from localqwen.training.config import JobConfig, config_to_dict, load_job_config
from localqwen.training.data import ValidationReport, read_rows, split_eval, validate_rows
from localqwen.training.data_sources import DataSources

EventSink = Callable[[Any], None]


class JobLog:
    """Writes each event as a JSON line to progress.jsonl and hands it to ``echo`` (the terminal)."""

    def __init__(self, path: Path, echo: EventSink | None = None, *, append: bool = False) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.echo = echo
        self._handle = path.open("a" if append else "w", encoding="utf-8")

    def __call__(self, event: Any) -> None:
        self._handle.write(event.to_json() + "\n")
        self._handle.flush()
        if self.echo is not None:
            self.echo(event)

    def close(self) -> None:
        self._handle.close()


def read_progress(path: Path) -> list[Any]:
    """Parse a progress log back into events (skips a half-written last line)."""
    found = []
    if not path.exists():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                found.append(ev.event_from_json(line))
            except ValueError:
                continue
    return found


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


def latest_checkpoint(output_dir: Path) -> Path | None:
    checkpoints = [p for p in output_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    if not checkpoints:
        return None
    return max(checkpoints, key=lambda p: int(p.name.split("-")[-1]))


def memory_mb() -> float:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    import psutil

    return psutil.Process().memory_info().rss / 2**20


# ---------------------------------------------------------------------------------------------
# Data


@dataclass
class PreparedData:
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]]
    report: ValidationReport
    eval_report: ValidationReport | None = None
    train_path: Path | None = None


def resolve_train_source(config: JobConfig, data_sources: DataSources | None = None) -> Path | str:
    """The train file or hub id; a ``[data.source]`` is built with ``data_sources`` (None: the built-ins)."""
    if config.data.source is not None:
        from localqwen.training.data_sources import build_data_source, builtin_data_sources

        sources = builtin_data_sources() if data_sources is None else data_sources
        return build_data_source(sources, config.data.source.name, config.output_path / "data",
                                 **config.data.source.options)
    assert config.data.train is not None
    if config.data.train.startswith("modelscope:"):
        return config.data.train
    return config.resolve(config.data.train)  # type: ignore[return-value]


def sibling_eval_file(train: Path) -> Path | None:
    """A generator's held-out file beside its train file (train.jsonl -> eval.jsonl, x_train -> x_test)."""
    for word in ("eval", "test", "validation"):
        candidate = train.with_name(train.name.replace("train", word))
        if candidate != train and candidate.exists():
            return candidate
    return None


def prepare_data(config: JobConfig, count_tokens: Callable[[dict[str, Any]], int] | None, emit: EventSink,
                 data_sources: DataSources | None = None) -> PreparedData:
    objective = config.training.objective
    train_source = resolve_train_source(config, data_sources)
    rows = read_rows(train_source, max_rows=config.data.max_rows)
    eval_rows: list[dict[str, Any]] = []
    eval_source: Path | None = None
    if config.data.eval:
        eval_source = config.resolve(config.data.eval)
    elif config.data.source is not None and isinstance(train_source, Path):
        eval_source = sibling_eval_file(train_source)
    if eval_source is not None:
        eval_rows = read_rows(eval_source)
    elif config.data.eval_fraction > 0:
        rows, eval_rows = split_eval(rows, config.data.eval_fraction, config.training.seed)
    # Packing limits each piece; other modes must fit whole rows.
    length_check = count_tokens if objective == "sft" else None
    report = validate_rows(rows, objective, max_length=config.training.max_length, count_tokens=length_check)
    eval_report = validate_rows(eval_rows, objective, max_length=config.training.max_length,
                                count_tokens=length_check) if eval_rows else None
    for name, rep in (("train", report), ("eval", eval_report)):
        if rep is not None and rep.problems:
            emit(ev.Warning(message=f"{name} data: {rep.summary()}"))
    if report.problems and not config.data.skip_bad_rows:
        raise ValueError(f"training data has bad rows (set data.skip_bad_rows = true to drop them): {report.summary()}")
    if not report.valid:
        raise ValueError(f"no valid training rows: {report.summary()}")
    return PreparedData(report.valid, eval_report.valid if eval_report else [], report, eval_report,
                        train_source if isinstance(train_source, Path) else None)


def sft_dataset(rows: list[dict[str, Any]]) -> Any:
    """Rows travel as JSON strings: chat rows have mixed shapes that Arrow cannot type."""
    import datasets

    texts = [json.dumps(r, ensure_ascii=False, default=str) for r in rows]
    return datasets.Dataset.from_dict({"row_json": texts, "length": [len(t) for t in texts]})


def dpo_dataset(rows: list[dict[str, Any]]) -> Any:
    """TRL's preference format: prompt messages, chosen/rejected turns, images in their own column."""
    import datasets

    from localqwen.training.data import message_images

    prompts, chosen, rejected, images = [], [], [], []
    for row in rows:
        prompt = row["prompt"]
        row_images = list(row.get("images") or [])
        if isinstance(prompt, str):
            prompt = [{"role": "user", "content": prompt}]
        flat = []
        for message in prompt:
            content = message.get("content")
            if isinstance(content, list):
                row_images += message_images([message])
                content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
            flat.append({"role": message["role"], "content": content})
        prompts.append(flat)
        chosen.append(_as_turns(row["chosen"]))
        rejected.append(_as_turns(row["rejected"]))
        images.append([str(i) for i in row_images])
    data: dict[str, Any] = {"prompt": prompts, "chosen": chosen, "rejected": rejected}
    if any(images):
        data["images"] = images
        dataset = datasets.Dataset.from_dict(data)
        return dataset.cast_column("images", datasets.Sequence(datasets.Image()))
    return datasets.Dataset.from_dict(data)


def _as_turns(value: Any) -> list[dict[str, str]]:
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    turns = []
    for message in value:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
        turns.append({"role": message.get("role", "assistant"), "content": content})
    return turns


# ---------------------------------------------------------------------------------------------
# Callbacks


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


# ---------------------------------------------------------------------------------------------
# Building the trainer


@dataclass
class JobParts:
    trainer: Any
    model: Any
    processor: Any
    is_vision: bool
    data: PreparedData
    method_info: Any
    progress: Any
    notes: list[str] = field(default_factory=list)


def training_arguments(config: JobConfig, *, has_eval: bool, max_steps: int | None = None) -> dict[str, Any]:
    import torch

    t = config.training
    cuda = torch.cuda.is_available()
    dtype_flags = {"bf16": False, "fp16": False}
    if t.precision == "bf16" or (t.precision == "auto" and cuda and torch.cuda.is_bf16_supported()):
        dtype_flags["bf16"] = True
    elif t.precision == "fp16":
        dtype_flags["fp16"] = True
    args: dict[str, Any] = {
        "output_dir": str(config.output_path),
        "num_train_epochs": t.epochs,
        "max_steps": t.max_steps if max_steps is None else max_steps,
        "per_device_train_batch_size": t.batch_size,
        "per_device_eval_batch_size": t.batch_size,
        "gradient_accumulation_steps": t.gradient_accumulation,
        "learning_rate": t.learning_rate,
        "lr_scheduler_type": t.lr_scheduler,
        "warmup_steps": t.warmup_ratio,  # a float < 1 is a fraction of the run
        "weight_decay": t.weight_decay,
        "max_grad_norm": t.max_grad_norm,
        "logging_steps": t.logging_steps,
        "save_strategy": "steps",
        "save_steps": t.save_steps,
        "save_total_limit": t.save_total_limit,
        "eval_strategy": "steps" if (has_eval and t.eval_steps) else "no",
        "eval_steps": t.eval_steps,
        "seed": t.seed,
        "data_seed": t.seed,
        "gradient_checkpointing": t.gradient_checkpointing,
        "optim": t.optimizer,
        "dataloader_num_workers": t.dataloader_workers,
        "report_to": "none",
        "disable_tqdm": True,
        "remove_unused_columns": False,
        "use_cpu": not cuda,
        "train_sampling_strategy": "group_by_length" if t.batching == "bucket" else "random",
        **dtype_flags,
    }
    if t.gradient_checkpointing:
        args["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    return args


def build_job(config: JobConfig, emit: EventSink, stop: StopFlag, *, max_steps: int | None = None,
              tracking: bool = True, data_sources: DataSources | None = None) -> JobParts:
    """Load the model, apply the method, prepare data and build the TRL trainer."""
    from transformers import set_seed

    from localqwen.training.collator import ChatCollator
    from localqwen.training.methods import apply_method
    from localqwen.training.modeling import load_model_and_processor

    t = config.training
    set_seed(t.seed)
    model_path = config.resolve(config.model.path)
    model_ref = str(model_path) if model_path is not None and model_path.exists() else config.model.path
    emit(ev.Step(step="load", title=f"Loading {model_ref}"))
    model, processor, is_vision = load_model_and_processor(
        model_ref, task=config.model.task, precision=t.precision,
        quantize_4bit=config.method.name == "qlora", trust_remote_code=config.model.trust_remote_code,
    )
    collator = ChatCollator(processor, max_length=t.max_length, pack=t.batching == "pack")
    if t.batching == "pack" and t.objective == "dpo":
        raise ValueError("batching = 'pack' is for SFT; use 'pad' or 'bucket' with DPO")
    data = prepare_data(config, collator.count_tokens, emit, data_sources)
    emit(ev.Log(message=f"data: {len(data.train)} training rows, {len(data.eval)} held-out rows"))

    set_seed(t.seed)  # the adapter's initial weights depend only on the seed
    info = apply_method(model, config.method.name, config.method.options)
    model = info.model
    if t.gradient_checkpointing and hasattr(model, "enable_input_require_grads") and config.method.name != "full":
        model.enable_input_require_grads()  # adapters on a frozen base need grads flowing into checkpoints
    emit(ev.Log(message=f"method {info.method}: {info.trainable_params:,} trainable of {info.total_params:,} "
                        f"parameters ({100 * info.trainable_fraction:.3f}%)"))

    progress = progress_callback(emit, config, stop)
    callbacks = [progress]
    notes = []
    if tracking:
        from localqwen.training.tracking import swanlab_callback

        swan, note = swanlab_callback(config.tracking.swanlab, config.output_path / "swanlog",
                                      config.tracking.project, config.tracking.experiment or config.name)
        notes.append(note)
        if swan is not None:
            callbacks.append(swan)
    args = training_arguments(config, has_eval=bool(data.eval), max_steps=max_steps)
    # The Trainer would print raw dicts on stdout; our events replace them.
    if t.objective == "dpo":
        from trl import DPOConfig, DPOTrainer

        dpo_args = DPOConfig(**args, beta=t.dpo_beta, max_length=t.max_length)
        trainer = DPOTrainer(model=model, args=dpo_args, train_dataset=dpo_dataset(data.train),
                             eval_dataset=dpo_dataset(data.eval) if data.eval else None,
                             processing_class=processor, callbacks=callbacks)
    else:
        from trl import SFTConfig, SFTTrainer

        sft_args = SFTConfig(**args, max_length=None, packing=False, dataset_kwargs={"skip_prepare_dataset": True})
        trainer = SFTTrainer(model=model, args=sft_args, train_dataset=sft_dataset(data.train),
                             eval_dataset=sft_dataset(data.eval) if data.eval else None,
                             processing_class=processor, data_collator=collator, callbacks=callbacks)
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    return JobParts(trainer, model, processor, is_vision, data, info, progress, notes)


# ---------------------------------------------------------------------------------------------
# Running


def run_job(config: JobConfig, *, resume: bool = False, echo: EventSink | None = None,
            stop: StopFlag | None = None, data_sources: DataSources | None = None) -> ev.Done:
    """Run the whole job; always ends by logging (and returning) a Done event.

    ``data_sources`` are the generators a ``[data.source]`` may name (``localqwen train`` passes the
    workbench's, plugins' included); None means LocalQwen's built-ins only."""
    stop = stop or StopFlag()
    output = config.output_path
    output.mkdir(parents=True, exist_ok=True)
    log = JobLog(config.progress_log, echo, append=resume)
    started = time.monotonic()
    try:
        done = _run(config, resume, log, stop, data_sources)
    except Exception as exc:
        import traceback

        log(ev.Error(message=f"{type(exc).__name__}: {exc}", detail=traceback.format_exc()))
        done = ev.Done(status="failed", summary=str(exc))
    done.elapsed_s = time.monotonic() - started
    log(done)
    log.close()
    return done


def _run(config: JobConfig, resume: bool, log: JobLog, stop: StopFlag, data_sources: DataSources | None) -> ev.Done:
    from localqwen.atomic import atomic_write_text
    from localqwen.training.config import dumps_toml

    output = config.output_path
    atomic_write_text(output / "job.toml", dumps_toml(config_to_dict(config)))
    checkpoint = latest_checkpoint(output) if resume else None
    if resume and checkpoint is None:
        log(ev.Warning(message=f"nothing to resume in {output}: starting from the beginning"))
    parts = build_job(config, log, stop, data_sources=data_sources)
    for note in parts.notes:
        log(ev.Log(message=note))
    log(ev.Step(step="train", title="Training"))
    if checkpoint is not None:
        log(ev.Log(message=f"resuming from {checkpoint.name}"))
    from localqwen.training.tracking import finish_swanlab

    try:
        return _train_and_save(config, parts, checkpoint, log, stop)
    finally:
        if config.tracking.swanlab != "off":
            finish_swanlab()


def _train_and_save(config: JobConfig, parts: JobParts, checkpoint: Path | None, log: JobLog, stop: StopFlag) -> ev.Done:
    output = config.output_path
    result = parts.trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    state = parts.trainer.state
    if stop.requested:
        saved = latest_checkpoint(output)
        log(ev.Step(step="train", title="Training", status="finished", detail=stop.reason))
        return ev.Done(status="cancelled", summary=f"{stop.reason}; checkpoint {saved.name if saved else 'none'} kept",
                       result={"checkpoint": str(saved) if saved else None, "step": state.global_step,
                               "output_dir": str(output)})
    result_info: dict[str, Any] = {"output_dir": str(output), "step": state.global_step,
                                   "train_loss": float(result.training_loss)}
    if parts.data.eval:
        metrics = parts.trainer.evaluate()  # its numbers reach the log through the callback
        if "eval_loss" in metrics:
            result_info["eval_loss"] = float(metrics["eval_loss"])
    final = output / "final"
    from localqwen.training.methods import save_trained

    save_trained(parts.trainer.model, final, config.method.name)
    parts.processor.save_pretrained(final)
    log(ev.FileWritten(path=str(final), description="trained model" if config.method.name == "full" else "adapter"))
    result_info["final"] = str(final)
    chart = write_loss_chart(parts.progress.losses, output / "loss.png")
    if chart is not None:
        log(ev.Image(path=str(chart), caption="training loss"))
    log(ev.Step(step="train", title="Training", status="finished"))
    return ev.Done(status="ok", summary=f"trained {state.global_step} steps, final loss "
                   f"{parts.progress.losses[-1][1] if parts.progress.losses else float('nan'):.4f}", result=result_info)


def write_loss_chart(points: list[tuple[int, float]], path: Path, title: str = "training loss") -> Path | None:
    """A PNG of loss over steps (matplotlib, Agg backend)."""
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
    os.replace(tmp, path)
    return path


def json_stdout_echo() -> EventSink:
    """Events go to the real stdout; anything libraries print is moved to stderr, so stdout stays JSON."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)

    def echo(event: Any) -> None:
        out.write(event.to_json() + "\n")
        out.flush()

    return echo


def main(argv: list[str] | None = None) -> int:
    """``python -m localqwen.training.runner CONFIG [--resume]`` (what `accelerate launch` runs)."""
    import argparse

    parser = argparse.ArgumentParser(prog="localqwen-train-job")
    parser.add_argument("config")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--json", action="store_true", help="also print events as JSON lines")
    options = parser.parse_args(argv)
    config = load_job_config(options.config)
    stop = StopFlag()
    stop.install_signal_handlers()
    echo = json_stdout_echo() if options.json else None
    done = run_job(config, resume=options.resume, echo=echo, stop=stop)
    return {"ok": 0, "failed": 1, "cancelled": 130}[done.status]


if __name__ == "__main__":
    sys.exit(main())
