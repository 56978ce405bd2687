"""The wizard's bookkeeping without a model: which marks a re-run keeps, presets by method and size,
and what a guided flow declaration must hold."""

from __future__ import annotations

import json

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


def test_two_windows_on_one_setup_keep_each_others_steps(tmp_path):
    """The TUI and the web wizard (or a CLI step) on one setup: a step saved in one window is not
    undone by a step saved later from a state the other window loaded before it."""
    from localqwen_trainer.state import WizardStore

    store = WizardStore(tmp_path)
    first = WizardState(name="s", model={"path": "/m"}, forms={"model": {"model": "/m"}})
    first.mark("model")
    store.save(first, "model")
    web, tui = store.load("s"), store.load("s")
    web.data, web.forms["data"] = {"train": "a.jsonl"}, {"file": "a.jsonl"}
    web.mark("data")
    store.save(web, "data")
    tui.model["suggested"], tui.forms["model"] = "lora", {"model": "/m", "task": "text"}
    tui.mark("model", changed=False)
    store.save(tui, "model")  # loaded before the data step was saved: merged, not written over it
    kept = store.load("s")
    assert kept.data == {"train": "a.jsonl"} and kept.forms["data"] == {"file": "a.jsonl"}
    assert kept.model["suggested"] == "lora" and kept.done == ["model", "data"]
    assert tui.done == ["model", "data"]  # the saving window sees the merged setup too
    on_disk = json.loads(store.path("s").read_text(encoding="utf-8"))
    assert "as_loaded" not in on_disk  # the merge base stays in memory
    on_disk["as_loaded"] = {"name": "x"}  # and a hand-edited file cannot plant one
    store.path("s").write_text(json.dumps(on_disk), encoding="utf-8")
    assert store.load("s").as_loaded == kept.saved_fields()


def test_a_step_whose_earlier_steps_changed_while_it_ran_is_not_saved(tmp_path):
    """Training takes an hour; if the data step is run again meanwhile in another window, the run's
    result rests on data no longer chosen: refused, named, and nothing of it written."""
    from localqwen_trainer.state import WizardChanged, WizardStore

    store = WizardStore(tmp_path)
    state = WizardState(name="s", forms={"data": {"file": "a.jsonl"}, "data_result": {"train": "a.jsonl"}})
    for step in STEPS[:4]:
        state.mark(step)
    store.save(state)
    running = store.load("s")  # the run step starts
    other = store.load("s")
    other.forms["data"], other.forms["data_result"] = {"file": "b.jsonl"}, {"train": "b.jsonl"}
    other.mark("data", changed=True)
    store.save(other, "data")
    running.training["final"] = "/out/final"
    running.mark("run")
    with pytest.raises(WizardChanged, match="step data was changed elsewhere .* while run ran, so run was not saved"):
        store.save(running, "run")
    kept = store.load("s")
    assert "final" not in kept.training and kept.done == ["model", "data", "method"]
    assert kept.forms["data"] == {"file": "b.jsonl"}
    later = store.load("s")  # a step after the change saves as usual
    later.mark("hyperparameters")
    store.save(later, "hyperparameters")
    assert store.load("s").done == ["model", "data", "method", "hyperparameters"]


def test_a_damaged_setup_file_is_named_with_what_to_do(tmp_path):
    from localqwen_trainer.state import WizardStore

    store = WizardStore(tmp_path)
    store.path("s").write_text('{"name": "s", "done": ["model"', encoding="utf-8")
    with pytest.raises(ValueError, match=r"wizard setup 's' \(.*s\.json\) cannot be read: .*delete it"):
        store.load("s")
    store.path("s").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="a JSON object was expected, not list"):
        store.load("s")
