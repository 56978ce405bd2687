"""The Trainer wizard: base model -> data -> method -> hyperparameters -> run -> evaluate/export.

Each step is an action over a saved wizard state (state.py), so the CLI runs the steps one by one;
the TUI and web view walk through them as one guided flow (wizard.py, ``guided_flow()``). Any step
can be run again to go back. The hyperparameters step writes the job config, which
`localqwen train CONFIG` can rerun without the wizard.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from localqwen.plugin_api import Context, Form, GuidedFlow, Plugin, Requirements, action, field
from localqwen.plugin_api import events as ev
from localqwen.training.methods import FULL, TRAINING_METHODS, MethodName
from localqwen_trainer.presets import preset_training, suggested_methods
from localqwen_trainer.state import STEPS, WizardChanged, WizardState
from localqwen_trainer.wizard import NAME_FIELD, NO_CUDA, WizardStore, trainer_flow, wizard_store

# A cancelled run finishes its current step and saves a checkpoint before it exits; SIGKILL only after this.
STOP_GRACE_S = 300.0


def _wizard_field() -> Any:
    return field("default", label="Wizard", help="Name of this training setup (several can be kept).")


class ModelForm(Form):
    wizard: str = _wizard_field()
    model: str = field(label="Base model", widget="folder", help="A local Qwen3 / Qwen3-VL folder (or hub id).")
    task: Literal["auto", "text", "vision"] = field("auto", label="Kind", help="auto reads the model's config.")


class DataForm(Form):
    wizard: str = _wizard_field()
    file: Path | None = field(None, label="Data file", widget="file",
                              help=".json, .jsonl, .csv or a saved datasets folder (or leave empty and pick a source).")
    source: str = field("", label="Data source", help="A registered generator, e.g. synthetic-shapes (see the list "
                                                      "this step prints). Used when no file is given.")
    source_options: str = field("{}", label="Source options (JSON)", advanced=True,
                                help='e.g. {"n_train": 500, "style": "plain"}')
    eval_file: Path | None = field(None, label="Held-out file", widget="file", advanced=True)
    eval_fraction: float = field(0.1, label="Held-out share", ge=0.0, le=0.5, step=0.05,
                                 help="Used when there is no held-out file.")
    preview: int = field(5, label="Rows to preview", ge=0, le=50, advanced=True)


class MethodForm(Form):
    wizard: str = _wizard_field()
    method: MethodName = field("lora", label="Method", choices=list(TRAINING_METHODS),
                               help="full: all weights (small models); qlora needs a CUDA GPU.")
    objective: Literal["sft", "dpo"] = field("sft", label="Objective", help="sft: learn answers; dpo: prefer chosen over rejected.")
    rank: int = field(8, label="Rank", ge=1, le=256, help="Adapter rank (LoRA family).")
    alpha: int = field(16, label="Alpha", ge=1, le=512, advanced=True)
    dropout: float = field(0.05, label="Dropout", ge=0.0, le=0.5, advanced=True)


class HyperparametersForm(Form):
    wizard: str = _wizard_field()
    preset: Literal["quick", "balanced", "thorough"] = field(
        "quick", label="Preset",
        help="Epochs, batch and a learning rate fitted to the method and the model's size (tiny demo models need "
             "far larger steps than a real Qwen3).")
    epochs: float | None = field(None, label="Epochs", advanced=True, help="Empty = the preset's value.")
    learning_rate: float | None = field(None, label="Learning rate", advanced=True)
    batch_size: int | None = field(None, label="Batch size", ge=1, advanced=True)
    gradient_accumulation: int | None = field(None, label="Gradient accumulation", ge=1, advanced=True)
    max_length: int | None = field(None, label="Max tokens per row", ge=16, advanced=True)
    max_steps: int = field(-1, label="Max steps", advanced=True, help="-1 = run all epochs.")
    gradient_checkpointing: bool = field(False, label="Gradient checkpointing", advanced=True,
                                         help="Less memory for activations, ~30% slower.")
    precision: Literal["auto", "fp32", "bf16", "fp16"] = field("auto", label="Precision", advanced=True)
    seed: int = field(42, label="Seed", advanced=True)
    measure_time: bool = field(False, label="Measure time", help="Run a few warm-up steps to estimate the duration.")


class RunForm(Form):
    wizard: str = _wizard_field()
    resume: bool = field(False, label="Resume", help="Continue from the last checkpoint.")


class EvaluateForm(Form):
    wizard: str = _wizard_field()
    metric: str = field("exact_match", label="Task metric",
                        help="exact_match, none, or a metric a plugin adds (the captioner's caption: BLEU-4, "
                             "ROUGE-L, CIDEr).")
    compare_rows: int = field(5, label="Rows to compare", ge=0, le=100, help="Base vs tuned answers side by side.")
    max_rows: int = field(100, label="Held-out rows to score", ge=1, le=10000, advanced=True)
    max_new_tokens: int = field(48, label="Max answer tokens", ge=1, le=2048, advanced=True)
    merge: bool = field(False, label="Merge adapter", help="Fold a LoRA into the base and save safetensors.")
    export_gguf: bool = field(False, label="Export GGUF",
                              help="Files for llama.cpp, Ollama and LM Studio (an adapter is merged into the base first).")
    gguf_type: str = field("Q4_K_M", label="GGUF type", advanced=True,
                           help="Q4_K_M (small, good), Q8_0 (near lossless), F16 (no quantizing), ...")


class ExportForm(Form):
    source: str = field(label="Model or run", widget="folder",
                        help="A training run folder (job.toml + final/), an adapter folder or a model folder.")
    quants: str = field("Q4_K_M", label="GGUF types",
                        help="Comma-separated: Q4_K_M (small, good), Q5_K_M, Q8_0 (near lossless), F16, BF16 ...")
    output_dir: str = field("", label="Output folder", widget="folder", help="Empty: outputs/gguf/NAME.")
    base: str = field("", label="Base model", advanced=True,
                      help="The base of an adapter that does not name it (a run names its own).")
    base_only: bool = field(False, label="Base model only", advanced=True,
                            help="MoE-LoRA / MoT-LoRA cannot be merged into plain weights: export the base alone.")
    name: str = field("", label="File name", advanced=True, help="Empty: the run or model folder's name.")


class StatusForm(Form):
    wizard: str = _wizard_field()


class BackForm(Form):
    wizard: str = _wizard_field()
    step: Literal["model", "data", "method", "hyperparameters", "run"] = field("data", label="Back to step")


class Trainer(Plugin):
    id = "trainer"
    title = "Trainer"
    description = "Fine-tune Qwen3 / Qwen3-VL: pick a model and data, choose a method, train, evaluate, export."
    # LoRA on the smallest Qwen3 (0.6B) with gradient checkpointing at 1024 tokens: ~3.5 GB on a GPU
    # in bf16 (training/estimate.py); on a CPU in fp32 ~3.9 GB at 512 tokens. Bigger models need more.
    requirements = Requirements(task="training", min_memory_gb=4.0)

    def guided_flow(self) -> GuidedFlow:
        return trainer_flow()

    # -- helpers -------------------------------------------------------------------------------

    def _store(self, ctx: Context) -> WizardStore:
        return wizard_store(ctx)

    def _save(self, ctx: Context, state: WizardState, step: str, kept: str = "") -> None:
        """Save the step into the setup (merged with what other windows saved meanwhile). Refused
        because a step before it changed elsewhere while it ran, the error also says what the step
        left behind (``kept``: a trained model, scores), so an hour's work is not lost from sight."""
        try:
            self._store(ctx).save(state, step)
        except WizardChanged as exc:
            if not kept:
                raise
            raise WizardChanged(f"{exc}; {kept}") from None

    def _finish(self, ctx: Context, state: WizardState, step: str, form: Form | None = None,
                result: Any = None, kept: str = "") -> Any:
        """Save the step: its form values (a wizard view shows them again) and whether its result
        changed (then the job config, run and evaluation built from it are undone)."""
        changed = True
        if form is not None:
            values = form.model_dump(mode="json", exclude={NAME_FIELD})
            key = f"{step}_result"
            changed = state.forms.get(step) != values or state.forms.get(key) != result
            state.forms[step] = values
            state.forms[key] = result
        state.mark(step, changed=changed)
        self._save(ctx, state, step, kept)
        following = state.next_step
        return ev.Done(summary=f"{step} saved" + (f"; next: {following}" if following else "; wizard complete"),
                       result={"wizard": state.name, "next_step": following})

    # -- steps ---------------------------------------------------------------------------------

    @action(form=ModelForm, title="1. Base model", description="Pick the base model and see the device plan.")
    def model(self, form: ModelForm, ctx: Context):
        from localqwen.runtime.model_files import check_model_folder
        from localqwen.training.estimate import available_memory_gb, estimate_memory, model_shape
        from localqwen.training.modeling import is_vision_model

        path = Path(form.model).expanduser()
        check_model_folder(path)  # the engine's checks: a config.json and safetensors weights (never pickle)
        vision = is_vision_model(path, form.task)
        shape = model_shape(path)
        free, device = available_memory_gb()
        rows = [["device", device], ["free memory (GiB)", round(free, 2)], ["parameters", f"{shape.total_params:,}"],
                ["kind", "vision (Qwen3-VL)" if vision else "text"]]
        suggestions = []
        estimates: dict[str, float] = {}
        for method in suggested_methods(shape.total_params):
            if method == "qlora" and device != "cuda":
                rows.append(["qlora", NO_CUDA])
                continue
            estimate = estimate_memory(shape, method=method, precision="bf16" if device == "cuda" else "fp32",
                                       batch_size=1, seq_len=1024, gradient_checkpointing=method != "full",
                                       available_gb=free, device=device)
            estimates[method] = round(estimate.total_gb, 3)
            rows.append([f"{method}: estimated GiB", round(estimate.total_gb, 2)])
            if estimate.fits:
                suggestions.append(method)
        plan = suggestions[0] if suggestions else "none fits"
        rows.append(["suggested method", plan])
        yield ev.Table(title="Device plan", columns=["item", "value"], rows=rows)
        state = self._store(ctx).load(form.wizard)
        state.model = {"path": str(path.resolve()), "task": "vision" if vision else "text", "suggested": plan,
                       "params": shape.total_params, "estimates": estimates}
        state.output_dir = state.output_dir or str(ctx.outputs_dir / state.name)
        yield self._finish(ctx, state, "model", form, result=state.model["path"])

    @action(form=DataForm, title="2. Data", description="Pick a data file or a built-in generator; validate and preview.")
    def data(self, form: DataForm, ctx: Context):
        from localqwen.training.data import preview_rows, read_rows, validate_rows
        from localqwen.training.data_sources import build_data_source

        state = self._store(ctx).load(form.wizard)
        state.require("model")
        sources = ctx.extensions.data_sources  # LocalQwen's own and every plugin's (Plugin.register)
        yield ev.Table(title="Data sources", columns=["name", "title", "from"],
                       rows=[[s.name, s.title, s.plugin_id or "built-in"] for _, s in sorted(sources.items())])
        data: dict[str, Any] = {"eval_fraction": form.eval_fraction}
        if form.file is not None:
            train = Path(form.file).expanduser().resolve()
            data["train"] = str(train)
        elif form.source:
            try:
                options = json.loads(form.source_options or "{}")
            except json.JSONDecodeError as exc:
                raise ValueError(f"source options are not valid JSON: {exc}") from None
            yield ev.Log(message=f"building data with '{form.source}'...")
            out = Path(state.output_dir or ctx.outputs_dir / state.name) / "data"
            train = build_data_source(sources, form.source, out, **options)
            data["train"] = str(train)
            data["source_used"] = form.source
        else:
            raise ValueError("give a data file, or a data source name")
        if form.eval_file is not None:
            data["eval"] = str(Path(form.eval_file).expanduser().resolve())
        else:
            from localqwen.training.job_data import sibling_eval_file

            sibling = sibling_eval_file(Path(data["train"]))
            if sibling is not None and form.source:
                data["eval"] = str(sibling)
        rows = read_rows(data["train"])
        objective = state.method.get("objective") or ("dpo" if rows and "chosen" in rows[0] else "sft")
        report = validate_rows(rows, objective)
        if report.problems:
            yield ev.Table(title="Rows with problems", columns=["row", "reason"],
                           rows=[[p.row, p.reason] for p in report.problems[:200]])
            yield ev.Warning(message=report.summary(limit=5) + " (bad rows are skipped when training)")
        else:
            yield ev.Log(message=report.summary())
        if form.preview:
            columns, table = preview_rows(rows, form.preview)
            yield ev.Table(title="Preview", columns=columns, rows=table)
        if not report.valid:
            raise ValueError("no valid rows to train on")
        data["rows"] = report.total
        data["valid_rows"] = len(report.valid)
        state.data = data
        yield self._finish(ctx, state, "data", form, result=data)

    @action(form=MethodForm, title="3. Method", description="Full fine-tuning or an adapter; SFT or DPO.")
    def method(self, form: MethodForm, ctx: Context):
        state = self._store(ctx).load(form.wizard)
        state.require("model", "data")
        options: dict[str, Any] = {}
        if form.method != FULL:
            from localqwen.adapters import get_method

            adapter = get_method(form.method)
            if adapter.needs_4bit and not ctx.device.host.cuda:
                raise ValueError(f"{form.method} {NO_CUDA}: pick lora (the same adapter on an unquantized model)")
            # The rank settings the method takes (IA3 has no rank).
            rank = {"r": form.rank, "alpha": form.alpha, "dropout": form.dropout}
            options = {key: value for key, value in rank.items() if key in adapter.options}
        state.method = {"name": form.method, "objective": form.objective, "options": options}
        yield ev.Log(message=f"{form.method} with {form.objective.upper()}")
        yield self._finish(ctx, state, "method", form, result=state.method)

    @action(form=HyperparametersForm, title="4. Hyperparameters", description="A preset (or your values) and the estimate.")
    def hyperparameters(self, form: HyperparametersForm, ctx: Context):
        from localqwen.training.config import parse_job_config, save_job_config
        from localqwen.training.estimate import estimate_for_job, estimate_time

        state = self._store(ctx).load(form.wizard)
        state.require("model", "data", "method")
        training = preset_training(form.preset, method=state.method["name"], params=state.model.get("params"))
        for key in ("epochs", "learning_rate", "batch_size", "gradient_accumulation", "max_length"):
            value = getattr(form, key)
            if value is not None:
                training[key] = value
        training.update(max_steps=form.max_steps, gradient_checkpointing=form.gradient_checkpointing,
                        precision=form.precision, seed=form.seed)
        state.training = training
        config = parse_job_config(state.job_config_dict())
        estimate = estimate_for_job(config)
        yield ev.Table(title="Memory estimate", columns=["part", "value"], rows=estimate.as_rows())
        if estimate.warning:
            yield ev.Warning(message=estimate.warning)
        if form.measure_time:
            yield ev.Log(message="measuring warm-up steps...")
            timing = estimate_time(config, warmup_steps=3)
            yield ev.Table(title="Time estimate", columns=["item", "value"], rows=[
                ["seconds per step", round(timing.seconds_per_step, 3)], ["steps", timing.total_steps],
                ["minutes", round(timing.total_seconds / 60, 2)]])
        path = save_job_config(config, Path(state.output_dir or ctx.outputs_dir / state.name) / "job.toml")
        state.config_path = str(path)
        yield ev.FileWritten(path=str(path), description=f"job config: rerun with `localqwen train {path}`")
        yield self._finish(ctx, state, "hyperparameters", form, result=training)

    @action(form=RunForm, title="5. Run", description="Train, with a live loss chart, progress and ETA.")
    def run(self, form: RunForm, ctx: Context):
        from localqwen.jobs.process_runner import command_events
        from localqwen.training.launch import job_command

        state = self._store(ctx).load(form.wizard)
        state.require("model", "data", "method", "hyperparameters")
        assert state.config_path and state.output_dir
        output_dir = Path(state.output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        # `localqwen train CONFIG --json` runs in its own process (a crash there never takes the UI
        # down); it alone writes progress.jsonl and draws the loss charts, and this step relays the
        # events it prints. Cancelling sends it SIGTERM: it saves a checkpoint and ends "cancelled".
        command = job_command(Path(state.config_path), resume=form.resume, json_events=True)
        yield ev.Log(message=f"training process: {' '.join(command)}")
        done: ev.Done | None = None
        for event in command_events(command, ctx.cancel, stderr_path=output_dir / "job_stderr.log",
                                    grace_s=STOP_GRACE_S):
            if isinstance(event, ev.Done):
                done = event
            else:
                yield event
        assert done is not None  # command_events always ends with a Done
        if done.status != "ok":
            yield done
            return
        state.training["final"] = done.result.get("final")
        finish = self._finish(ctx, state, "run", form, result=done.result,
                              kept=f"the model it trained is kept in {done.result.get('final')} (export it with "
                                   f"`localqwen run trainer export --source {output_dir}`)")
        finish.result.update(done.result)
        finish.summary = done.summary + "; next: evaluate"
        yield finish

    @action(form=EvaluateForm, title="6. Evaluate and export",
            description="Held-out loss and metric, base vs tuned side by side, merge, GGUF.")
    def evaluate(self, form: EvaluateForm, ctx: Context):
        from localqwen.training import after
        from localqwen.training.data import read_rows
        from localqwen.training.methods import load_trained
        from localqwen.training.modeling import load_model_and_processor

        state = self._store(ctx).load(form.wizard)
        state.require("run")
        final = Path(state.training["final"])
        base_path = state.model["path"]
        method = state.method["name"]
        rows = self._heldout_rows(state, read_rows)[: form.max_rows]
        if not rows:
            raise ValueError("no held-out rows: give a held-out file or a held-out share in the data step")
        base, processor, _ = load_model_and_processor(base_path, task=state.model.get("task", "auto"), precision="fp32")
        if method == "full":
            tuned, tuned_processor, _ = load_model_and_processor(final, task=state.model.get("task", "auto"), precision="fp32")
        else:
            fresh, tuned_processor, _ = load_model_and_processor(base_path, task=state.model.get("task", "auto"), precision="fp32")
            tuned = load_trained(fresh, final)
        result: dict[str, Any] = {}
        if state.method.get("objective") == "dpo":
            accuracy = after.preference_accuracy(tuned, tuned_processor, rows)
            result["preference_accuracy"] = accuracy
            yield ev.Metric(step=0, values={"preference_accuracy": accuracy})
        else:
            metric = after.get_metric(ctx.extensions.metrics, form.metric)
            yield ev.Step(step="eval", title=f"Scoring {len(rows)} held-out rows")
            scores = after.evaluate(tuned, tuned_processor, rows, metric=metric, max_new_tokens=form.max_new_tokens)
            values = {"eval_loss": scores.loss or float("nan"), **scores.metrics}
            result.update(values)
            # The same rows through the base model: what the training changed, number by number.
            before = after.evaluate(base, processor, rows, metric=metric, max_new_tokens=form.max_new_tokens)
            base_values = {"eval_loss": before.loss or float("nan"), **before.metrics}
            result.update({f"base_{k}": v for k, v in base_values.items()})
            yield ev.Table(title=f"Held-out scores ({len(rows)} rows)", columns=["score", "base", "tuned"],
                           rows=[[k, round(base_values.get(k, float("nan")), 4), round(v, 4)] for k, v in values.items()])
            if form.compare_rows:
                columns, table = after.compare((base, processor), (tuned, tuned_processor), rows[: form.compare_rows],
                                               max_new_tokens=form.max_new_tokens)
                yield ev.Table(title="Base vs tuned", columns=columns, rows=table)
        if form.merge:
            if method == "full":
                yield ev.Warning(message="full fine-tuning has no adapter to merge: the model is already whole")
            else:
                merged = after.merge_lora(base_path, final, Path(state.output_dir) / "merged")
                result["merged"] = str(merged)
                yield ev.FileWritten(path=str(merged), description="merged model (safetensors)")
        if form.export_gguf:
            from localqwen.training.gguf_export import ExportError, export_events
            from localqwen.training.llama_converter import ConverterNotFound

            try:  # the run folder: export_events merges an adapter into its base itself
                exported = yield from export_events(Path(state.output_dir), Path(state.output_dir) / "gguf",
                                                    [form.gguf_type], name=state.name, cancel=ctx.cancel)
                result["gguf"] = str(exported.path(form.gguf_type))
            except (ExportError, ConverterNotFound, ValueError) as exc:
                yield ev.Warning(message=f"GGUF export: {exc}")
        summary = ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items())
        state.mark("evaluate")
        self._save(ctx, state, "evaluate", kept=f"what it found: {summary}")
        yield ev.Done(summary=summary, result=result)

    def _heldout_rows(self, state: WizardState, read_rows: Any) -> list[dict[str, Any]]:
        if state.data.get("eval"):
            return read_rows(state.data["eval"])
        from localqwen.training.data import split_eval

        rows = read_rows(state.data["train"])
        return split_eval(rows, state.data.get("eval_fraction", 0.1), state.training.get("seed", 42))[1]

    @action(form=ExportForm, title="Export GGUF",
            description="Any run, adapter or model to GGUF for llama.cpp, Ollama and LM Studio: merge, convert, quantize.")
    def export(self, form: ExportForm, ctx: Context):
        from localqwen.training.gguf_export import export_events, inspect_source

        plan = inspect_source(form.source, base=form.base or None)
        if plan.kind == "adapter":  # said before any work: whether the adapter can be in the files
            yield ev.Log(message=f"{plan.describe()}: " + ("merged into the base before converting" if plan.mergeable
                                                           else f"cannot be merged ({plan.reason})"))
        out = Path(form.output_dir).expanduser() if form.output_dir else ctx.outputs_dir / "gguf" / (form.name or plan.name)
        quants = [q for q in form.quants.split(",") if q.strip()]
        result = yield from export_events(form.source, out, quants, base=form.base or None, name=form.name or None,
                                          base_only=form.base_only, cancel=ctx.cancel)
        yield ev.Done(summary=f"{len(result.files)} GGUF file(s) in {result.output_dir} ({result.seconds:.1f}s)",
                      result=result.as_dict())

    # -- navigation ----------------------------------------------------------------------------

    @action(form=StatusForm, title="Wizard status", description="Where this wizard stands, step by step.")
    def status(self, form: StatusForm, ctx: Context):
        state = self._store(ctx).load(form.wizard)
        yield ev.Table(title=f"Wizard '{state.name}'", columns=["step", "done", "values"], rows=state.rows())
        if state.config_path:
            yield ev.Log(message=f"job config: {state.config_path}")
        yield ev.Done(summary=f"next step: {state.next_step or 'none (complete)'}",
                      result={"next_step": state.next_step, "done": state.done})

    @action(form=BackForm, title="Back", description="Go back to a step; later steps keep their values.")
    def back(self, form: BackForm, ctx: Context):
        state = self._store(ctx).load(form.wizard)
        index = STEPS.index(form.step)
        state.done = [s for s in state.done if STEPS.index(s) < index]
        self._store(ctx).save(state)
        yield ev.Done(summary=f"back at step '{form.step}'", result={"next_step": state.next_step})
