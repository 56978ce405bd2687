"""Launching (direct or `accelerate launch`), registered data sources, and bucketed batches."""

from __future__ import annotations

import json
import sys

import pytest

from localqwen.training.config import parse_job_config
from localqwen.training.data_sources import DataSource, build_data_source, builtin_data_sources
from localqwen.training.job_data import prepare_data
from localqwen.training.launch import job_command
from localqwen.training.runner import run_job


def test_one_device_runs_directly_several_gpus_use_accelerate(tmp_path):
    config = tmp_path / "job.toml"
    train = ["-m", "localqwen.cli.main", "train", str(config)]
    assert job_command(config, num_gpus=1) == [sys.executable, *train]
    assert job_command(config, json_events=True, num_gpus=0) == [sys.executable, *train, "--json"]
    command = job_command(config, resume=True, json_events=True, num_gpus=4)
    assert command[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert command[-6:] == [*train, "--resume", "--json"]  # every rank runs `localqwen train` itself
    written = (tmp_path / "accelerate.yaml").read_text()
    assert "num_processes: 4" in written and "distributed_type: MULTI_GPU" in written
    import yaml

    from localqwen.training.launch import write_accelerate_config

    for precision in ("no", "bf16", "fp16"):  # YAML must not read "no" as false (accelerate crashed on it)
        path = write_accelerate_config(tmp_path / "precision.yaml", 2, precision)
        assert yaml.safe_load(path.read_text())["mixed_precision"] == precision


def test_registered_sources_build_data_for_a_job(tmp_path):
    def tiny_source(out_dir, n=3):
        path = out_dir / "train.jsonl"
        path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                                         {"role": "assistant", "content": f"a{i}"}]}) + "\n" for i in range(n)))
        (out_dir / "eval.jsonl").write_text(path.read_text().splitlines()[0] + "\n")
        return path

    # The sources are an explicit argument (the app passes its Extensions.data_sources); no registry.
    sources = {**builtin_data_sources(), "tiny-test": DataSource("tiny-test", "A tiny test source", tiny_source)}
    config = parse_job_config({"output_dir": str(tmp_path / "out"), "model": {"path": "unused"},
                               "data": {"source": {"name": "tiny-test", "options": {"n": 5}}}})
    data = prepare_data(config, None, lambda _e: None, sources)
    assert len(data.train) == 5 and len(data.eval) == 1  # the eval file beside train.jsonl is found
    with pytest.raises(KeyError, match="unknown data source 'tiny-test' \\(registered: synthetic-shapes\\)"):
        prepare_data(config, None, lambda _e: None)  # without them: LocalQwen's own only

    shapes = build_data_source(builtin_data_sources(), "synthetic-shapes", tmp_path / "shapes", n_train=4, n_eval=2,
                               objective="dpo")
    rows = [json.loads(line) for line in shapes.read_text().splitlines()]
    assert len(rows) == 4 and all(r["chosen"] != r["rejected"] for r in rows)
    assert (tmp_path / "shapes" / rows[0]["prompt"][0]["content"][0]["image"]).exists()


def test_bucketed_batches_train(tmp_path, tiny_qwen3_path):
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": "word " * (i % 7 + 1)},
                                                     {"role": "assistant", "content": str(i)}]}) + "\n" for i in range(24)))
    config = parse_job_config({"output_dir": str(tmp_path / "out"), "model": {"path": str(tiny_qwen3_path)},
                               "data": {"train": str(data)}, "method": {"name": "full"},
                               "training": {"max_steps": 3, "batch_size": 4, "batching": "bucket"},
                               "tracking": {"swanlab": "off"}})
    assert run_job(config).status == "ok"


def test_bucketed_batches_are_grouped_by_token_counts(tmp_path, tiny_qwen3_path):
    """The sampler's lengths are the rows' token counts: rows that differ only in a long metadata
    field (or, in templated data, in one word) are one length, so they do not make batches of their own."""
    from localqwen.training.job_build import build_job
    from localqwen.training.job_progress import StopFlag

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"id": "x" * (50 * i), "messages": [
        {"role": "user", "content": "word " * (i % 3 + 1)}, {"role": "assistant", "content": "yes"}]}) + "\n"
        for i in range(12)))
    config = parse_job_config({"output_dir": str(tmp_path / "out"), "model": {"path": str(tiny_qwen3_path)},
                               "data": {"train": str(data)}, "method": {"name": "full"},
                               "training": {"max_steps": 1, "batch_size": 4, "batching": "bucket"},
                               "tracking": {"swanlab": "off"}})
    parts = build_job(config, lambda event: None, StopFlag(), tracking=False)
    tokens = [parts.trainer.data_collator.count_tokens(row) for row in parts.data.train]
    assert len(set(tokens)) == 3  # three prompt lengths; the ids' 0-550 characters add nothing
    assert parts.trainer.train_dataset["length"] == tokens
    assert parts.trainer._get_train_sampler().lengths == tokens


def test_under_accelerate_each_rank_trains_and_only_rank_0_speaks(tmp_path, monkeypatch, tiny_qwen3_path):
    import os
    import subprocess

    from localqwen.training.config import save_job_config
    from localqwen.training.launch import under_distributed_launcher

    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert not under_distributed_launcher()
    monkeypatch.setenv("LOCAL_RANK", "1")  # what `accelerate launch` gives each worker: train, don't relaunch
    assert under_distributed_launcher()

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                                     {"role": "assistant", "content": str(i)}]}) + "\n" for i in range(8)))
    config = parse_job_config({"output_dir": str(tmp_path / "out"), "model": {"path": str(tiny_qwen3_path)},
                               "data": {"train": str(data)}, "method": {"name": "lora"},
                               "training": {"max_steps": 1, "batch_size": 4}, "tracking": {"swanlab": "off"}})
    config_file = save_job_config(config, tmp_path / "job.toml")
    # A rank other than 0 (RANK=1; no LOCAL_RANK here, so no process group is formed) trains silently.
    env = {key: value for key, value in os.environ.items() if key != "LOCAL_RANK"} | {"RANK": "1",
                                                                                        "OMP_NUM_THREADS": "1"}
    ran = subprocess.run([sys.executable, "-m", "localqwen.cli.main", "train", str(config_file), "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout == "" and not config.progress_log.exists()
