"""`localqwen train`: bad configs exit 2 with the key named; --estimate-only shows memory and time."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from localqwen.cli.main import app

runner = CliRunner()


def test_bad_config_exits_2_with_the_problem(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text('output_dir = "o"\n[model]\npath = "m"\n[data]\ntrain = "t.jsonl"\n[training]\nbatch_sise = 2\n')
    result = runner.invoke(app, ["train", str(path)])
    assert result.exit_code == 2
    assert "training.batch_sise: unknown key (did you mean 'batch_size'?)" in result.output


def test_estimate_only_prints_memory_and_time_without_training(tmp_path, tiny_qwen3_path):
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                                     {"role": "assistant", "content": f"a{i}"}]}) + "\n" for i in range(16)))
    path = tmp_path / "job.toml"
    path.write_text(f'output_dir = "out"\n[model]\npath = "{tiny_qwen3_path}"\n[data]\ntrain = "{data}"\n'
                    '[training]\nbatch_size = 4\nepochs = 1\n[tracking]\nswanlab = "off"\n')
    result = runner.invoke(app, ["train", str(path), "--estimate-only", "--warmup-steps", "2", "--json"])
    assert result.exit_code == 0, result.output
    # The test runner mixes library stderr (progress bars) into stdout; a terminal keeps them apart.
    events = [json.loads(line[line.index('{"kind"'):]) for line in result.output.splitlines() if '{"kind"' in line]
    tables = {e["title"]: e for e in events if e["kind"] == "table"}
    memory = dict(tuple(row) for row in tables["Memory estimate"]["rows"])
    assert memory["fits"] == "yes" and float(memory["total"].removesuffix(" GiB")) > 0
    assert "GiB" not in memory["trainable parameters"]  # a count, not a size
    timing = dict(tuple(row) for row in tables["Time estimate"]["rows"])
    assert timing["total steps"] == 4 and timing["seconds per step"] > 0
    assert events[-1]["kind"] == "done" and events[-1]["status"] == "ok"
    assert not (tmp_path / "out").exists()
