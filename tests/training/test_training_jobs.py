"""The trainer's run step is a job of the one job engine: `localqwen train CONFIG --json` runs in
its own process (the real command, on the tiny model), the step relays its events, cancel stops it
with SIGTERM after a checkpoint, and resume continues from that checkpoint."""

from __future__ import annotations

import json
import time
from pathlib import Path

from localqwen.app import Workbench
from localqwen.plugin_api import events as ev
from localqwen.training.config import load_job_config
from localqwen.training.event_log import read_progress

# Enough steps that the cancel, sent as soon as the first loss is relayed, lands well before the end:
# at ~0.02 s a step (one thread, below) the relay has ~2 s; the resumed run's ~98 steps take as long.
STEPS = 100


def _prepare_wizard(bench, tmp_path, model) -> Path:
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"Say the number {i}."},
                                                     {"role": "assistant", "content": str(i % 5)}]}) + "\n"
                            for i in range(40)))
    written = None
    for action, values in [("model", {"model": str(model)}), ("data", {"file": str(data), "eval_fraction": 0.1}),
                           ("method", {"method": "lora", "rank": 4}),
                           ("hyperparameters", {"preset": "quick", "learning_rate": 5e-3, "max_steps": STEPS,
                                                "max_length": 64, "batch_size": 2})]:
        events = list(bench.run("trainer", action, values))
        assert events[-1].status == "ok", (action, events[-1].summary)
        written = next((e for e in events if isinstance(e, ev.FileWritten)), written)
    assert written is not None
    return load_job_config(written.path).output_path


def _loss_metrics(events):
    return [e for e in events if isinstance(e, ev.Metric) and "loss" in e.values]


def test_trainer_run_cancel_and_resume_go_through_the_job_engine(tmp_path, tiny_qwen3_path, monkeypatch):
    # The training process inherits this: one thread steps the tiny model ~50x faster than two
    # competing for the cores with this process (measured: ~0.02 s against ~0.4-1.8 s a step).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    bench = Workbench.create()
    jobs = bench.services.jobs
    output = _prepare_wizard(bench, tmp_path, tiny_qwen3_path)

    job = bench.start_action("trainer", "run", {})
    assert jobs.get(job.id) is job and job.kind == "action"
    deadline = time.monotonic() + 300
    while not _loss_metrics(job.events) and not job.finished:
        assert time.monotonic() < deadline, [getattr(e, "message", e) for e in job.events]
        time.sleep(0.05)
    assert not job.finished, job.summary
    started = next(e for e in job.events if isinstance(e, ev.Log) and e.message.startswith("training process:"))
    assert "localqwen.cli.main train" in started.message and started.message.endswith("--json")
    assert jobs.cancel(job.id)
    assert job.wait(300)
    assert job.status == "cancelled" and [e.kind for e in job.events].count("done") == 1
    assert jobs.record(job.id).status == "cancelled"

    # The training process stopped on SIGTERM after a step, kept a checkpoint and said so itself.
    written = read_progress(output / "progress.jsonl")
    stopped = written[-1]
    assert isinstance(stopped, ev.Done) and stopped.status == "cancelled" and "SIGTERM" in stopped.summary
    step = stopped.result["step"]
    assert 1 <= step < STEPS and Path(stopped.result["checkpoint"]) == output / f"checkpoint-{step}"
    # The follower only relays: its metrics are the process's own lines, each once.
    relayed = _loss_metrics(job.events)
    assert relayed == _loss_metrics(written)[: len(relayed)]

    resumed = bench.start_action("trainer", "run", {"resume": True})
    assert resumed.wait(300)
    assert resumed.status == "ok", resumed.summary
    assert any(isinstance(e, ev.Log) and e.message == f"resuming from checkpoint-{step}" for e in resumed.events)
    assert [m.step for m in _loss_metrics(resumed.events)] == list(range(step + 1, STEPS + 1))
    assert any(isinstance(e, ev.Progress) and e.eta_s is not None for e in resumed.events)
    # The loss chart is the training process's: the final one covers the whole run, from step 1.
    images = [e for e in resumed.events if isinstance(e, ev.Image)]
    assert images and Path(images[-1].path) == output / "loss.png" and (output / "loss.png").stat().st_size > 0
    done = resumed.events[-1]
    assert done.result["step"] == STEPS and (Path(done.result["final"]) / "adapter_config.json").exists()
    assert done.result["next_step"] == "evaluate"

    # progress.jsonl holds both runs, each step once: nobody else wrote into it.
    assert [m.step for m in _loss_metrics(read_progress(output / "progress.jsonl"))] == list(range(1, STEPS + 1))
    # Both runs are recorded jobs a new process can reopen.
    again = Workbench.create().services.jobs
    assert [again.record(j.id).status for j in (job, resumed)] == ["cancelled", "ok"]
    assert [e.kind for e in again.events(resumed.id)] == [e.kind for e in resumed.events]


def test_the_training_process_draws_live_and_final_loss_charts_into_its_event_stream(tmp_path):
    from localqwen.training.loss_chart import LossChart

    seen = []
    chart = LossChart(seen.append, tmp_path, every_s=0.0, earlier=[(1, 2.0), (2, 1.5)])
    chart(ev.Log(message="not a loss"))
    chart(ev.Metric(step=3, values={"eval_loss": 1.4}))  # held-out numbers are not the training curve
    assert [e.kind for e in seen] == ["log", "metric"]
    chart(ev.Metric(step=3, values={"loss": 1.2}))
    live = seen[-1]
    assert isinstance(live, ev.Image) and Path(live.path) == tmp_path / "loss_live.png"
    assert live.caption == "training loss up to step 3" and (tmp_path / "loss_live.png").read_bytes()[:4] == b"\x89PNG"
    assert chart.points == [(1, 2.0), (2, 1.5), (3, 1.2)]  # a resumed run's chart starts at step 1
    assert chart.final() == tmp_path / "loss.png" and seen[-1].caption == "training loss"
    assert live.key == seen[-1].key == "training-loss"  # the final chart replaces the live one in a view
    quiet = LossChart(seen.append, tmp_path / "rank1", every_s=0.0, enabled=False)  # not rank 0
    quiet(ev.Metric(step=1, values={"loss": 1.0}))
    assert quiet.final() is None and not (tmp_path / "rank1").exists() and seen[-1].kind == "metric"
