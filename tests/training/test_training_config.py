"""Job config files: TOML / YAML, clear messages for unknown or wrong keys, round trip."""

from __future__ import annotations

import pytest

from localqwen.training.config import JobConfigError, load_job_config, save_job_config

GOOD_TOML = """
name = "demo"
output_dir = "runs/demo"
[model]
path = "models/tiny"
[data]
train = "data/train.jsonl"
eval_fraction = 0.1
[method]
name = "lora"
options = { r = 16, alpha = 32 }
[training]
objective = "sft"
learning_rate = 1e-4
batch_size = 2
"""


def test_toml_config_loads_with_paths_relative_to_the_file(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text(GOOD_TOML)
    config = load_job_config(path)
    assert config.method.options == {"r": 16, "alpha": 32}
    assert config.training.learning_rate == 1e-4
    assert config.output_path == tmp_path / "runs" / "demo"
    assert config.resolve(config.data.train) == tmp_path / "data" / "train.jsonl"


def test_unknown_key_names_the_path_and_suggests_the_right_one(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text(GOOD_TOML.replace("learning_rate", "learnig_rate"))
    with pytest.raises(JobConfigError) as info:
        load_job_config(path)
    assert "training.learnig_rate: unknown key (did you mean 'learning_rate'?)" in str(info.value)
    assert str(path) in str(info.value)


def test_wrong_types_and_values_are_reported_with_their_keys(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(
        "output_dir: out\nmodel: {path: m}\ndata: {train: t.jsonl}\n"
        "method: {name: lorra}\ntraining: {batch_size: zero, objective: ppo}\n"
    )
    with pytest.raises(JobConfigError) as info:
        load_job_config(path)
    message = str(info.value)
    assert "method.name" in message and "lorra" in message
    assert "training.batch_size" in message and "integer" in message
    assert "training.objective" in message


def test_missing_sections_and_data_origin(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text('output_dir = "o"\n[data]\neval_fraction = 0.1\n')
    with pytest.raises(JobConfigError) as info:
        load_job_config(path)
    assert "model: required key is missing" in str(info.value)
    assert "data.train (a file) or data.source" in str(info.value)


def test_broken_toml_is_reported_with_its_line(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text('output_dir = "o"\n[model\npath = "x"\n')
    with pytest.raises(JobConfigError, match="cannot parse TOML.*line 2"):
        load_job_config(path)


@pytest.mark.parametrize("suffix", [".toml", ".yaml"])
def test_saved_config_loads_back_identical(tmp_path, suffix):
    source = tmp_path / "job.toml"
    source.write_text(GOOD_TOML)
    config = load_job_config(source)
    copy = save_job_config(config, tmp_path / f"copy{suffix}")
    again = load_job_config(copy)
    assert again.model_dump(exclude={"base_dir"}) == config.model_dump(exclude={"base_dir"})
