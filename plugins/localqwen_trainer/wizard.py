"""The trainer's guided flow: which actions make the wizard, and what each step offers.

The TUI and web view render it generically (plugin_api/guide.py): step k of n, Next/Back, the
setup's name asked once, each step's form prefilled with the values it last ran with, and lists
to choose from: models on disk and in the catalog, data sources, the methods this machine can run
(the others greyed out with the reason), presets. Before Run the memory estimate of the saved job.
The CLI runs the same actions one by one (`localqwen run trainer model ...`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localqwen.plugin_api import Choice, Context, FlowStep, GuidedFlow, StepView
from localqwen.plugin_api import events as ev
from localqwen_trainer.presets import PRESET_HELP, PRESETS, preset_training
from localqwen_trainer.state import STEPS, WizardState, WizardStore

__all__ = ["STEPS", "WizardState", "WizardStore", "trainer_flow"]

NAME_FIELD = "wizard"
FLOW_STEPS = (
    FlowStep("model", "Base model", "model", lists=("model",)),
    FlowStep("data", "Data", "data", lists=("source",)),
    FlowStep("method", "Method", "method", lists=("method",)),
    FlowStep("hyperparameters", "Hyperparameters", "hyperparameters", lists=("preset",)),
    FlowStep("run", "Run", "run", run_label="Start training"),
    FlowStep("evaluate", "Evaluate and export", "evaluate"),
)
NO_CUDA = "needs a CUDA GPU (bitsandbytes 4-bit); this machine has none"
GGUF_ONLY = "only as GGUF here, which runs but cannot be trained: training needs the safetensors model"


def wizard_store(ctx: Context) -> WizardStore:
    return WizardStore(ctx.data_dir / "wizards")


def trainer_flow() -> GuidedFlow:
    return GuidedFlow(title="Training wizard", steps=FLOW_STEPS, name_field=NAME_FIELD, view=step_view,
                      done=lambda name, ctx: list(wizard_store(ctx).load(name).done))


def step_view(step: str, name: str, ctx: Context) -> StepView:
    state = wizard_store(ctx).load(name)
    values = dict(state.forms.get(step, {}))
    view = StepView(values=values, done=list(state.done))
    if step == "model":
        view.choices["model"] = model_choices(ctx, state)
    elif step == "data":
        view.choices["source"] = [Choice(s.name, f"{s.name}: {s.title}") for _, s in sorted(ctx.extensions.data_sources.items())]
    elif step == "method":
        view.choices["method"] = method_choices(ctx, state)
        values.setdefault("method", _suggested(state, view.choices["method"]))
    elif step == "hyperparameters":
        view.choices["preset"] = preset_choices(state)
    elif step == "run":
        view.intro = run_intro(state)
    elif step == "evaluate" and state.training.get("final"):
        view.intro = [ev.Log(message=f"trained model: {state.training['final']}")]
    return view


# -- lists --------------------------------------------------------------------------------------

def model_choices(ctx: Context, state: WizardState) -> list[Choice]:
    """This setup's model, models other setups used, trained models in the outputs, models in the
    Hugging Face / ModelScope caches, and the catalog's chat models (those not downloaded greyed
    out, with the command that fetches them; GGUF-only ones greyed out: training needs safetensors)."""
    choices: dict[str, Choice] = {}

    def add(value: str, label: str, unavailable: str = "") -> None:
        choices.setdefault(value, Choice(value, label, unavailable))

    if state.model.get("path"):
        add(state.model["path"], f"{Path(state.model['path']).name} (this setup's model)")
    store = wizard_store(ctx)
    for other in store.names():
        path = store.load(other).model.get("path")
        if path and Path(path, "config.json").exists():
            add(path, f"{Path(path).name} (used by setup '{other}')")
    outputs = ctx.outputs_dir
    for config in sorted(outputs.glob("*/*/config.json")) if outputs.is_dir() else []:
        add(str(config.parent), f"{config.parent.parent.name}/{config.parent.name} (trained here)")
    try:
        from localqwen.runtime.hub_cache import cached_models

        cached = cached_models(generative_only=True)
    except Exception:  # an unreadable cache only means fewer entries
        cached = []
    for model in cached:
        if model.format == "transformers":
            add(str(model.path), model.label)
        else:
            add(str(model.path), model.label, unavailable=GGUF_ONLY)
    try:
        catalog = ctx.models.list_models()
    except Exception as exc:  # the catalog is a convenience: the path field still works without it
        catalog = []
        add("", f"catalog unavailable: {type(exc).__name__}", unavailable=str(exc))
    for row in catalog:
        if row.get("kind", "chat") != "chat":
            continue
        label = f"{row['title']} ({row['params_b']:g}B)"
        if row.get("path"):
            add(row["path"], f"{label}, downloaded")
        elif row.get("gguf_paths") or row.get("status") == "bundled":
            add(row["id"], label, unavailable=GGUF_ONLY)
        else:
            add(row["id"], label, unavailable=f"not downloaded: localqwen models download {row['id']}")
    return list(choices.values())


def method_choices(ctx: Context, state: WizardState) -> list[Choice]:
    """Every training method; those this machine cannot run are greyed out with the reason."""
    from localqwen.adapters import get_method
    from localqwen.training.methods import FULL, TRAINING_METHODS

    host = ctx.device.host
    estimates = state.model.get("estimates", {})
    out = []
    for name in TRAINING_METHODS:
        unavailable = ""
        if name != FULL and get_method(name).needs_4bit:
            if not host.cuda:
                unavailable = NO_CUDA
            elif not host.bitsandbytes:
                unavailable = "needs bitsandbytes (pip install bitsandbytes)"
        gb = estimates.get(name)
        label = name + (f" (about {gb:.2f} GiB)" if gb is not None else "")
        out.append(Choice(name, label, unavailable))
    return out


def _suggested(state: WizardState, methods: list[Choice]) -> str:
    suggested = str(state.model.get("suggested", ""))
    available = [str(c.value) for c in methods if c.available]
    return suggested if suggested in available else (available[0] if available else "lora")


def preset_choices(state: WizardState) -> list[Choice]:
    method = state.method.get("name", "lora")
    params = state.model.get("params")
    out = []
    for preset in PRESETS:
        rate = preset_training(preset, method=method, params=params)["learning_rate"]
        out.append(Choice(preset, f"{preset}: {PRESET_HELP[preset]}, learning rate {rate:g} for {method}"))
    return out


def run_intro(state: WizardState) -> list[Any]:
    """The memory estimate of the saved job, so it is seen before Run."""
    if "hyperparameters" not in state.done or not state.config_path:
        return [ev.Warning(message="do the Hyperparameters step first: it writes the job this step runs")]
    from localqwen.training.config import load_job_config
    from localqwen.training.estimate import estimate_for_job

    config = load_job_config(state.config_path)
    estimate = estimate_for_job(config)
    intro: list[Any] = [ev.Table(title="Memory estimate", columns=["part", "value"], rows=estimate.as_rows())]
    if estimate.warning:
        intro.append(ev.Warning(message=estimate.warning))
    intro.append(ev.Log(message=f"job: {config.method.name}, {config.training.epochs:g} epoch(s), learning rate "
                                f"{config.training.learning_rate:g}, batch {config.training.batch_size}; "
                                f"config {state.config_path}"))
    return intro
