"""Running a built training job: train (from a checkpoint when resuming), stop cleanly on request,
score the held-out rows, save the result and the final loss chart, and say how it ended.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localqwen.training.config import JobConfig
from localqwen.training.job_build import JobParts
from localqwen.training.job_progress import StopFlag
from localqwen.training.loss_chart import LossChart
from localqwen.vocabulary import events as ev


def latest_checkpoint(output_dir: Path) -> Path | None:
    checkpoints = [p for p in output_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    if not checkpoints:
        return None
    return max(checkpoints, key=lambda p: int(p.name.split("-")[-1]))


def checkpoint_step(checkpoint: Path) -> int:
    return int(checkpoint.name.split("-")[-1])


def train_and_save(config: JobConfig, parts: JobParts, checkpoint: Path | None, chart: LossChart,
                   stop: StopFlag) -> ev.Done:
    """Train and save; the returned ``Done`` is ``cancelled`` (checkpoint kept) when ``stop`` was requested."""
    output = config.output_path
    result = parts.trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    state = parts.trainer.state
    if stop.requested:
        saved = latest_checkpoint(output)
        chart.final()
        chart(ev.Step(step="train", title="Training", status="finished", detail=stop.reason))
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

    if parts.trainer.is_world_process_zero():  # with several GPUs every rank holds the same weights
        save_trained(parts.trainer.model, final, config.method.name)
        parts.processor.save_pretrained(final)
    chart(ev.FileWritten(path=str(final), description="trained model" if config.method.name == "full" else "adapter"))
    result_info["final"] = str(final)
    chart.final()
    chart(ev.Step(step="train", title="Training", status="finished"))
    losses = parts.progress.losses
    return ev.Done(status="ok", summary=f"trained {state.global_step} steps, final loss "
                   f"{losses[-1][1] if losses else float('nan'):.4f}", result=result_info)
