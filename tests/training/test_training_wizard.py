"""The trainer wizard plugin: every step through the same API the CLI, TUI and web view use."""

from __future__ import annotations

import json
from pathlib import Path

from localqwen.app import Workbench
from localqwen.plugin_api import events as ev
from localqwen.training.config import load_job_config


def _run(bench, action, **values):
    events = list(bench.run("trainer", action, values))
    done = events[-1]
    assert isinstance(done, ev.Done)
    return events, done


def _rows(n):
    return [{"messages": [{"role": "user", "content": f"Say the word number {i % 3}."},
                          {"role": "assistant", "content": ["zero", "one", "two"][i % 3]}]} for i in range(n)]


def test_wizard_goes_from_model_to_evaluation_and_saves_a_rerunnable_config(tmp_path, tiny_qwen3_path, monkeypatch):
    # The run step's training process inherits this: one thread steps the tiny model far faster
    # than two competing with this process for the cores (see test_training_jobs).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    bench = Workbench.create()
    data = tmp_path / "train.jsonl"
    rows = _rows(40)
    rows[5]["messages"][-1]["content"] = ""  # reported by number, skipped in training
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    events, done = _run(bench, "model", model=str(tiny_qwen3_path))
    assert done.status == "ok" and done.result["next_step"] == "data"
    plan = next(e for e in events if isinstance(e, ev.Table) and e.title == "Device plan")
    assert ["device", "cpu"] in plan.rows and any(r[0] == "suggested method" for r in plan.rows)

    _events, done = _run(bench, "method", method="lora")
    assert done.status == "failed" and "do the step(s) data first" in done.summary

    events, done = _run(bench, "data", file=str(data), eval_fraction=0.2, preview=3)
    assert done.status == "ok"
    problems = next(e for e in events if isinstance(e, ev.Table) and e.title == "Rows with problems")
    assert problems.rows == [[6, "empty answer (assistant message 2)"]]
    preview = next(e for e in events if isinstance(e, ev.Table) and e.title == "Preview")
    assert len(preview.rows) == 3 and preview.rows[0][3] == "zero"
    assert any(isinstance(e, ev.Table) and ["synthetic-shapes"] in [r[:1] for r in e.rows] for e in events)

    _run(bench, "method", method="lora", rank=4)
    events, done = _run(bench, "hyperparameters", preset="quick", learning_rate=5e-3, max_steps=4, max_length=64)
    assert done.status == "ok", done.summary
    assert any(isinstance(e, ev.Table) and e.title == "Memory estimate" for e in events)
    written = next(e for e in events if isinstance(e, ev.FileWritten))
    config = load_job_config(written.path)  # what `localqwen train CONFIG` reruns
    assert config.method.name == "lora" and config.training.max_steps == 4 and config.data.eval_fraction == 0.2

    # Going back keeps values but asks for the later steps again.
    _events, done = _run(bench, "back", step="method")
    assert done.result["next_step"] == "method"
    _events, done = _run(bench, "run")
    assert done.status == "failed" and "method, hyperparameters" in done.summary
    _run(bench, "method", method="lora", rank=4)
    _run(bench, "hyperparameters", preset="quick", learning_rate=5e-3, max_steps=4, max_length=64)

    events, done = _run(bench, "run")
    assert done.status == "ok", done.summary
    metrics = [e for e in events if isinstance(e, ev.Metric) and "loss" in e.values]
    assert [m.step for m in metrics] == list(range(1, 5))
    assert any(isinstance(e, ev.Progress) and e.eta_s is not None for e in events)
    assert any(isinstance(e, ev.Image) for e in events)

    events, done = _run(bench, "evaluate", compare_rows=2, max_rows=4, max_new_tokens=4, merge=True, export_gguf=True,
                        gguf_type="F16")  # no quantizing pass: seconds less
    assert done.status == "ok", done.summary
    assert "eval_loss" in done.result and "exact_match" in done.result and "base_exact_match" in done.result
    scores = next(e for e in events if isinstance(e, ev.Table) and e.title.startswith("Held-out scores"))
    assert scores.columns == ["score", "base", "tuned"] and [r[0] for r in scores.rows] == ["eval_loss", "exact_match"]
    compare = next(e for e in events if isinstance(e, ev.Table) and e.title == "Base vs tuned")
    assert compare.columns == ["prompt", "expected", "base", "tuned"] and len(compare.rows) == 2
    assert (Path(done.result["merged"]) / "model.safetensors").exists()
    # The run folder exported to GGUF (the adapter merged on the way), or a clear reason why not.
    exported = done.result.get("gguf")
    assert (exported and Path(exported).stat().st_size > 0) or any(
        isinstance(e, ev.Warning) and e.message.startswith("GGUF export:") for e in events)

    _events, done = _run(bench, "status")
    assert done.result["next_step"] is None

    # Evaluating again while another window runs the data step anew: not saved, and its error says
    # what it found. Then the job config again, for the run below.
    events = []
    for event in bench.run("trainer", "evaluate", {"compare_rows": 0, "max_rows": 4, "max_new_tokens": 2}):
        events.append(event)
        if isinstance(event, ev.Step) and len(events) == 1:
            _events, changed = _run(bench, "data", file=str(data), eval_fraction=0.3, preview=1)
            assert changed.status == "ok"
    done = events[-1]
    assert isinstance(done, ev.Done) and done.status == "failed"
    assert "while evaluate ran, so evaluate was not saved; run it again; what it found: eval_loss=" in done.summary
    _run(bench, "hyperparameters", preset="quick", learning_rate=5e-3, max_steps=4, max_length=64)

    # Training again while another window runs the data step anew: the run is not saved into the
    # setup (it rests on data no longer chosen), and its error says where the trained model is.
    events = []
    for event in bench.run("trainer", "run", {}):
        events.append(event)
        if isinstance(event, ev.Metric) and not any(isinstance(e, ev.Metric) for e in events[:-1]):
            _events, changed = _run(bench, "data", file=str(data), eval_fraction=0.25, preview=1)
            assert changed.status == "ok"
    done = events[-1]
    assert isinstance(done, ev.Done) and done.status == "failed"
    assert "step data was changed elsewhere" in done.summary and "run was not saved" in done.summary
    kept = Path(done.summary.split("the model it trained is kept in ")[1].split(" (export it")[0])
    assert (kept / "adapter_config.json").exists()  # the trained adapter, ready to export
    _events, done = _run(bench, "status")
    assert done.result["next_step"] == "hyperparameters"


def test_the_installed_plugins_register_their_data_sources_and_metrics():
    """What `localqwen train` and the wizard choose from: the built-ins plus the captioner's and RAG's."""
    from localqwen.training import after

    extensions = Workbench.create().extensions
    assert {"synthetic-shapes", "coco-captions", "rag-router-sft", "rag-router-dpo"} <= set(extensions.data_sources)
    assert extensions.data_sources["rag-router-sft"].plugin_id == "rag"
    scores = after.get_metric(extensions.metrics, "caption")(["a red circle"], ["a red circle"])
    assert scores and all(value > 0 for value in scores.values())
