"""The wizard's bookkeeping without a model: which marks a re-run keeps, presets by method and size,
and what a guided flow declaration must hold."""

from __future__ import annotations

import pytest
from localqwen_trainer.presets import TINY_MODEL_PARAMS, preset_training, suggested_methods
from localqwen_trainer.state import STEPS, WizardState

from localqwen.plugin_api import FlowStep, GuidedFlow, StepView


def test_running_a_step_again_keeps_the_other_marks_unless_its_result_changed():
    state = WizardState(name="s", done=list(STEPS[:5]))
    state.mark("model", changed=False)
    assert state.done == list(STEPS[:5])
    state.mark("model", changed=True)  # a new model: the job config, run and evaluation are redone
    assert state.done == ["model", "data", "method"]
    state.mark("hyperparameters")
    state.mark("data", changed=True)
    assert state.done == ["model", "data", "method"]


def test_presets_fit_the_method_and_the_model_size():
    tiny, real = TINY_MODEL_PARAMS // 100, 600_000_000
    assert preset_training("quick", method="full", params=tiny)["learning_rate"] == 2e-3
    assert preset_training("quick", method="lora", params=real)["learning_rate"] == 2e-4
    assert preset_training("quick", method="full", params=None)["learning_rate"] == 2e-5  # unknown: careful
    assert preset_training("balanced", method="lora", params=real)["lr_scheduler"] == "cosine"
    assert suggested_methods(tiny)[0] == "full" and suggested_methods(real)[0] == "lora"
    with pytest.raises(ValueError, match="unknown preset 'fast'"):
        preset_training("fast", method="lora", params=real)


def test_a_guided_flow_needs_distinct_steps():
    def view(step, name, ctx):
        return StepView()

    with pytest.raises(ValueError, match="no steps"):
        GuidedFlow("f", (), "name", view, lambda name, ctx: [])
    with pytest.raises(ValueError, match="repeat"):
        GuidedFlow("f", (FlowStep("a", "A", "a"), FlowStep("a", "B", "b")), "name", view, lambda name, ctx: [])
    flow = GuidedFlow("f", (FlowStep("a", "A", "a"), FlowStep("b", "B", "b")), "name", view, lambda name, ctx: [])
    assert flow.first_open(["a"]) == 1 and flow.first_open(["a", "b"]) == 1 and flow.first_open([]) == 0
    with pytest.raises(KeyError, match="no step 'c'"):
        flow.index("c")
