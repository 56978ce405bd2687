"""Building a training job: the model and its method (full or an adapter), the data, and TRL's
``SFTTrainer`` or ``DPOTrainer`` with our collator and callbacks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from localqwen.training.config import JobConfig
from localqwen.training.data_sources import DataSources
from localqwen.training.event_log import EventSink
from localqwen.training.job_data import PreparedData, dpo_dataset, prepare_data, sft_dataset
from localqwen.training.job_progress import StopFlag, progress_callback
from localqwen.vocabulary import events as ev


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
    from localqwen.training.methods import apply_method, loads_in_4bit
    from localqwen.training.modeling import load_model_and_processor

    t = config.training
    set_seed(t.seed)
    model_path = config.resolve(config.model.path)
    model_ref = str(model_path) if model_path is not None and model_path.exists() else config.model.path
    emit(ev.Step(step="load", title=f"Loading {model_ref}"))
    model, processor, is_vision = load_model_and_processor(
        model_ref, task=config.model.task, precision=t.precision,
        quantize_4bit=loads_in_4bit(config.method.name), trust_remote_code=config.model.trust_remote_code,
    )
    emit(ev.Step(step="load", title=f"Loading {model_ref}", status="finished"))  # the views close its panel
    collator = ChatCollator(processor, max_length=t.max_length, pack=t.batching == "pack")
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
        bucket = t.batching == "bucket"  # the sampler groups rows by their token counts
        trainer = SFTTrainer(model=model, args=sft_args,
                             train_dataset=sft_dataset(data.train, data.report.lengths if bucket else None),
                             eval_dataset=sft_dataset(data.eval, data.eval_report.lengths if bucket else None)
                             if data.eval else None,
                             processing_class=processor, data_collator=collator, callbacks=callbacks)
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    return JobParts(trainer, model, processor, is_vision, data, info, progress, notes)
