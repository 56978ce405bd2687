"""One list of methods: the adapters' registrations feed the job config, the trainer's form and
``apply_method``, and each method gets only the options it takes."""

from __future__ import annotations

import json

import pytest

from localqwen.adapters import METHODS, AdapterError, get_method, method_options, register_adapter_method
from localqwen.adapters.config_base import TargetConfig
from localqwen.app import Workbench
from localqwen.plugin_api import FormError, parse_form
from localqwen.plugin_api import events as ev
from localqwen.plugin_api.forms import form_fields
from localqwen.training.config import JobConfigError, parse_job_config
from localqwen.training.methods import TRAINING_METHODS, apply_method


def test_the_job_config_and_the_trainer_form_read_the_registered_methods():
    from localqwen_trainer.plugin import MethodForm

    assert METHODS == ("lora", "qlora", "dora", "ia3", "moe-lora", "mot-lora")
    assert ("full", *METHODS) == TRAINING_METHODS
    field = next(f for f in form_fields(MethodForm) if f.name == "method")
    assert field.choices == list(TRAINING_METHODS) and field.default == "lora"
    with pytest.raises(FormError, match="did you mean 'ia3'"):
        parse_form(MethodForm, {"method": "ia4"})
    base = {"output_dir": "out", "model": {"path": "m"}, "data": {"train": "t.jsonl"}}
    with pytest.raises(JobConfigError) as caught:
        parse_job_config({**base, "method": {"name": "lorra"}})
    choices = ", ".join(f"'{m}'" for m in TRAINING_METHODS[:-1]) + f" or '{TRAINING_METHODS[-1]}'"
    assert str(caught.value) == f"method.name: Input should be {choices}; did you mean 'lora'? (got \"lorra\")"
    assert parse_job_config({**base, "method": {"name": "mot-lora"}}).method.name == "mot-lora"


def test_options_come_from_each_method_config():
    assert method_options("ia3") == ["gradient_checkpointing", "include_mlp", "include_vision", "target_modules"]
    assert {"r", "alpha", "dropout", "kernel_size"} <= set(method_options("mot-lora"))
    assert get_method("qlora").needs_4bit and not get_method("lora").needs_4bit
    assert get_method("moe-lora").own and not get_method("dora").own
    with pytest.raises(AdapterError, match="registered twice"):
        register_adapter_method(name="lora", config_cls=TargetConfig, inject=lambda model, config: model,
                                trainable_per_layer=lambda name, fan_in, fan_out, config: 0)
    with pytest.raises(AdapterError, match="must be a TargetConfig"):
        register_adapter_method(name="new-one", config_cls=dict, inject=lambda model, config: model,
                                trainable_per_layer=lambda name, fan_in, fan_out, config: 0)
    assert "new-one" not in METHODS


def test_the_trainer_gives_ia3_no_rank_options_and_they_apply(tmp_path, tiny_qwen3_path):
    from transformers import AutoModelForCausalLM

    bench = Workbench.create()
    data = tmp_path / "train.jsonl"
    rows = [{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}] * 4
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for action, values in (("model", {"model": str(tiny_qwen3_path)}), ("data", {"file": str(data)}),
                           ("method", {"method": "ia3", "rank": 4})):
        done = list(bench.run("trainer", action, values))[-1]
        assert isinstance(done, ev.Done) and done.status == "ok", done.summary
    from localqwen_trainer.wizard import WizardStore

    state = WizardStore(bench.context("trainer").data_dir / "wizards").load("default")
    assert state.method == {"name": "ia3", "objective": "sft", "options": {}}
    result = apply_method(AutoModelForCausalLM.from_pretrained(tiny_qwen3_path), "ia3", state.method["options"])
    assert 0 < result.trainable_params < result.total_params
