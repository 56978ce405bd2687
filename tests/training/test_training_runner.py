"""The job process: JSON-lines progress log, cancel with a checkpoint, exact resume, DPO, bad data."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from localqwen.plugin_api import events as ev
from localqwen.training.config import parse_job_config, save_job_config
from localqwen.training.event_log import read_progress
from localqwen.training.runner import run_job

REPO = Path(__file__).resolve().parents[2]


def _sft_rows(n=48):
    return [{"messages": [{"role": "system", "content": "Answer with a number."},
                          {"role": "user", "content": f"What is {i} plus {i}?"},
                          {"role": "assistant", "content": str(2 * i)}]} for i in range(n)]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _config(tmp_path, model, **training):
    data = _write_jsonl(tmp_path / "train.jsonl", _sft_rows())
    raw = {
        "name": "test",
        "output_dir": str(tmp_path / "out"),
        "model": {"path": str(model)},
        "data": {"train": str(data), "eval_fraction": 0.1},
        "method": {"name": "lora", "options": {"r": 4, "dropout": 0.1}},
        "training": {"max_steps": 6, "batch_size": 4, "learning_rate": 5e-3, "save_steps": 100, **training},
        "tracking": {"swanlab": "off"},
    }
    return parse_job_config(raw)


def test_sft_job_writes_a_progress_log_the_uis_can_follow(tmp_path, tiny_qwen3_path):
    config = _config(tmp_path, tiny_qwen3_path)
    config.tracking.swanlab = "local"
    done = run_job(config)
    assert done.status == "ok", done.summary
    events = read_progress(config.progress_log)
    # Every line parses back into a plugin event (the job manager uses the same parser).
    lines = config.progress_log.read_text().splitlines()
    assert len(events) == len(lines) and all(ev.event_from_json(line) for line in lines)
    metrics = [e for e in events if isinstance(e, ev.Metric) and "loss" in e.values]
    assert [m.step for m in metrics] == [1, 2, 3, 4, 5, 6]
    for key in ("loss", "learning_rate", "grad_norm", "epoch", "samples_per_s", "memory_mb"):
        assert key in metrics[-1].values, key
    progress = [e for e in events if isinstance(e, ev.Progress)]
    assert progress[-1].done == progress[-1].total == 6 and progress[0].eta_s is not None
    assert any(isinstance(e, ev.Metric) and "eval_loss" in e.values for e in events)
    assert metrics[-1].values["loss"] < metrics[0].values["loss"]  # it learns
    assert isinstance(events[-1], ev.Done) and events[-1].result["final"]
    assert (Path(done.result["final"]) / "adapter_config.json").exists()
    assert any(isinstance(e, ev.Image) for e in events) and (config.output_path / "loss.png").exists()
    # SwanLab kept its run locally.
    assert any((config.output_path / "swanlog").iterdir())


def test_a_second_run_into_the_same_output_folder_is_refused_and_touches_nothing(tmp_path, tiny_qwen3_path):
    """The wizard's Run pressed in two windows, or the CLI beside it: the second run would truncate the
    first one's progress log and write over its checkpoints. It ends at once, failed, naming the holder;
    once the folder is free the job runs."""
    from localqwen.storage.file_lock import FileLock
    from localqwen.training.runner import RUN_LOCK

    config = _config(tmp_path, tiny_qwen3_path, max_steps=2)
    config.output_path.mkdir(parents=True)
    config.progress_log.write_text('{"kind": "log", "message": "the first run is writing"}\n')
    first = FileLock(config.output_path / RUN_LOCK)
    assert first.acquire(blocking=False)  # the first run, as another process holds it
    try:
        echoed = []
        done = run_job(config, echo=echoed.append)
        assert done.status == "failed" and echoed == [done]
        assert f"{config.output_path} is in use by another training run (pid {os.getpid()} on " in done.summary
        assert "another output_dir" in done.summary
        assert config.progress_log.read_text() == '{"kind": "log", "message": "the first run is writing"}\n'
        assert sorted(p.name for p in config.output_path.iterdir()) == [RUN_LOCK, "progress.jsonl"]
    finally:
        first.release()
    assert run_job(config).status == "ok"


def _losses(log):
    return {e.step: e.values["loss"] for e in read_progress(log) if isinstance(e, ev.Metric) and "loss" in e.values}


def test_sigterm_saves_a_checkpoint_and_resume_matches_an_uninterrupted_run(tmp_path, tiny_qwen3_path):
    steps = 8
    (tmp_path / "a").mkdir()
    straight = _config(tmp_path / "a", tiny_qwen3_path, max_steps=steps)
    assert run_job(straight).status == "ok"
    expected = _losses(straight.progress_log)

    (tmp_path / "b").mkdir()
    interrupted = _config(tmp_path / "b", tiny_qwen3_path, max_steps=steps)
    config_file = save_job_config(interrupted, tmp_path / "b" / "job.toml")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "localqwen.cli.main", "train", str(config_file), "--json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in process.stdout:
        event = ev.event_from_json(line)
        if isinstance(event, ev.Metric) and event.step >= 3:
            process.send_signal(signal.SIGTERM)
            break
    process.stdout.read()
    assert process.wait(timeout=120) == 130
    done = read_progress(interrupted.progress_log)[-1]
    assert done.status == "cancelled" and "SIGTERM" in done.summary
    stopped_at = done.result["step"]
    assert 3 <= stopped_at < steps
    assert Path(done.result["checkpoint"]).name == f"checkpoint-{stopped_at}"

    # Resuming in this process is the same code path as `--resume`, without another interpreter start.
    resumed = run_job(interrupted, resume=True)
    assert resumed.status == "ok", resumed.summary
    events = read_progress(interrupted.progress_log)
    assert any(isinstance(e, ev.Log) and e.message == f"resuming from checkpoint-{stopped_at}" for e in events)
    got = _losses(interrupted.progress_log)
    assert sorted(got) == list(range(1, steps + 1))
    for step in range(1, steps + 1):
        assert got[step] == pytest.approx(expected[step], rel=1e-5, abs=1e-6), step


def test_dpo_job_runs_on_preference_pairs(tmp_path, tiny_qwen3_path):
    pairs = [{"prompt": [{"role": "user", "content": f"Is {i} even?"}],
              "chosen": "yes" if i % 2 == 0 else "no", "rejected": "no" if i % 2 == 0 else "yes"} for i in range(16)]
    data = _write_jsonl(tmp_path / "pairs.jsonl", pairs)
    config = parse_job_config({
        "output_dir": str(tmp_path / "dpo"), "model": {"path": str(tiny_qwen3_path)},
        "data": {"train": str(data)}, "method": {"name": "lora"},
        "training": {"objective": "dpo", "max_steps": 3, "batch_size": 4, "max_length": 64},
        "tracking": {"swanlab": "off"},
    })
    done = run_job(config)
    assert done.status == "ok", done.summary
    metrics = [e for e in read_progress(config.progress_log) if isinstance(e, ev.Metric) and "loss" in e.values]
    assert len(metrics) == 3 and any(k.startswith("rewards/") for k in metrics[0].values)


@pytest.mark.parametrize("batching", ["bucket", "pack"])
def test_dpo_with_grouped_batches_is_refused_by_name_in_the_config(tmp_path, batching):
    """Refused where the job file is read (the CLI and the wizard show it), before any model loads."""
    from localqwen.training.config import JobConfigError

    with pytest.raises(JobConfigError, match=f"batching = '{batching}' is for SFT; use 'pad' with DPO"):
        parse_job_config({"output_dir": str(tmp_path / "dpo"), "model": {"path": "unused"},
                          "data": {"train": "pairs.jsonl"}, "method": {"name": "lora"},
                          "training": {"objective": "dpo", "batching": batching}})


def test_bad_rows_stop_the_job_with_their_numbers_when_not_skipped(tmp_path, tiny_qwen3_path):
    rows = _sft_rows(6)
    rows[2]["messages"][-1]["content"] = ""
    config = _config(tmp_path, tiny_qwen3_path)
    _write_jsonl(Path(config.data.train), rows)
    config.data.skip_bad_rows = False
    done = run_job(config)
    assert done.status == "failed"
    assert "row 3: empty answer" in done.summary
    assert read_progress(config.progress_log)[-1].status == "failed"


@pytest.mark.parametrize("method", ["moe-lora", "ia3"])
def test_adapter_methods_from_the_registry_train_and_reload(tmp_path, tiny_qwen3_path, method):
    from transformers import AutoModelForCausalLM

    from localqwen.training.methods import load_trained

    config = _config(tmp_path, tiny_qwen3_path, max_steps=2)
    config.method.name = method
    config.method.options = {"r": 4} if method != "ia3" else {}
    config.data.eval_fraction = 0.0
    done = run_job(config)
    assert done.status == "ok", done.summary
    reloaded = load_trained(AutoModelForCausalLM.from_pretrained(tiny_qwen3_path), Path(done.result["final"]))
    marker = {"moe-lora": ".router.", "ia3": "ia3_l"}[method]
    assert any(marker in name for name, _ in reloaded.named_parameters())
