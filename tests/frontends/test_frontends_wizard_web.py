"""The trainer's guided flow in the web view, the run-step crash (a folder handed to gr.File), and
the metrics: one chart per quantity, a keyed image replaced in place.

The handler tests build the real Blocks with the real trainer plugin and a tiny Qwen3; the slow
test launches `localqwen web`, walks steps through gradio_client and trains in Chromium.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from web_process import served_web

from localqwen.app import Workbench
from localqwen.plugin_api import events as ev
from localqwen.web.event_renderer import RunView

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "screenshots"


def words_rows(n: int = 24) -> str:
    rows = [{"messages": [{"role": "user", "content": f"Say the word number {i % 3}."},
                          {"role": "assistant", "content": ["zero", "one", "two"][i % 3]}]} for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows)


# -- the event renderer ---------------------------------------------------------------------------
def test_a_written_folder_is_listed_never_handed_to_gradio_as_a_file(tmp_path):
    """The web run step crashed with IsADirectoryError when the adapter folder went to gr.File."""
    import gradio as gr

    final = tmp_path / "outputs" / "trainer" / "web" / "final"
    final.mkdir(parents=True)
    (final / "adapter_model.safetensors").write_bytes(b"x" * 10)
    (final / "adapter_config.json").write_text("{}")
    chart = tmp_path / "outputs" / "loss.png"
    chart.write_bytes(b"not drawn")
    view = RunView(allowed_roots=[tmp_path / "outputs"])
    view.add(ev.FileWritten(path=str(final), description="adapter"))
    view.add(ev.FileWritten(path=str(chart), description="chart"))
    assert view.files == [str(chart)]  # the folder is not among the downloads
    text = view.markdown()
    assert f"📁 `{final}`" in text and "`adapter_config.json`" in text and "`adapter_model.safetensors`" in text
    # What the run step now hands to gr.File are plain files it can copy into its cache.
    assert all(Path(f).is_file() for f in view.files)
    gr.File(file_count="multiple").postprocess(view.files)


def test_a_keyed_image_replaces_the_previous_one_and_metrics_get_one_chart_per_quantity(tmp_path):
    first, second = tmp_path / "live.png", tmp_path / "final.png"
    for path in (first, second):
        path.write_bytes(b"png")
    view = RunView(allowed_roots=[tmp_path])
    view.add(ev.Image(path=str(first), caption="training loss up to step 5", key="training-loss"))
    view.add(ev.Image(path=str(tmp_path / "live.png"), caption="another picture"))
    view.add(ev.Image(path=str(second), caption="training loss", key="training-loss"))
    assert view.images == [(str(second), "training loss"), (str(first), "another picture")]
    assert view.metrics_figure() is None
    for step in range(1, 24):  # what the trainer logs every step
        view.add(ev.Metric(step=step, values={"loss": 7.0 - step * 0.2, "grad_norm": 1.5, "learning_rate": 2e-3,
                                              "num_tokens": 900.0 * step, "epoch": step / 23, "memory_mb": 812.0,
                                              "mean_token_accuracy": 0.1 + step / 40, "entropy": 3.0}))
    view.add(ev.Metric(step=23, values={"eval_loss": 2.6}))
    figure = view.metrics_figure()
    titles = [axes.get_title() for axes in figure.axes]
    # loss (train + held-out on one axis) first; counters left out; one axis each, not one line among ten.
    assert [title.split(":")[0] for title in titles] == ["loss", "token accuracy", "learning rate", "gradient norm",
                                                         "memory (MB)"]
    assert {line.get_label() for line in figure.axes[0].get_lines()} == {"loss", "eval_loss"}
    assert view.metrics_figure() is figure  # not drawn again without a new point


# -- the wizard tab's handlers ----------------------------------------------------------------------
@pytest.fixture
def web(monkeypatch):
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "trainer")
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    from localqwen.web.app import build_web_app

    return build_web_app(Workbench.create())


def values_for(tab, **given):
    """Every step's field values as the page sends them (each field's default unless given)."""
    return [given.get(f.spec.name, f.spec.default) for panel in tab.steps for f in panel.fields]


def drain(generator):
    frames = list(generator)
    assert frames
    return frames[-1]


def test_the_web_wizard_steps_keep_the_name_offer_lists_and_show_the_estimate(web, tiny_qwen3_path):
    tab = web.wizards["trainer"]
    shown = tab.open_setup("web")
    index, header = shown[0], shown[1]
    assert index == 0 and "Step 1 of 6: Base model" in header and "**▶ 1. Base model**" in header
    notes = shown[2 + 2]  # step 1's group, intro, notes
    assert "not downloaded: localqwen models download" in notes and "lq-unavailable" in notes

    words = web.bench.paths.uploads_dir / "words.jsonl"  # where the page's uploads land
    words.parent.mkdir(parents=True, exist_ok=True)
    words.write_text(words_rows())
    values = values_for(tab, model=str(tiny_qwen3_path), file=str(words), max_steps=2)
    result = drain(tab.run(0, "web", *values))
    assert "done" in result[1], result[1]
    assert "✓ 1. Base model" in result[-1]  # the step bar learns the step is done

    shown = tab.next(0, "web")
    assert shown[0] == 1 and "Step 2 of 6: Data" in shown[1]
    group_updates = shown[2:2 + len(tab._step_components())]
    assert group_updates[0]["visible"] is False  # step 1 hidden, step 2 shown
    assert drain(tab.run(1, "web", *values))[1].startswith("✅")

    # Re-running step 1 with the same values keeps step 2 done.
    assert "done" in drain(tab.run(0, "web", *values))[1]
    shown = tab.next(1, "web")
    assert shown[0] == 2 and "✓ 2. Data" in shown[1]
    notes = shown[2 + sum(3 + len(p.fields) for p in tab.steps[:2]) + 2]
    assert "qlora" in notes and "CUDA" in notes  # greyed out, with the reason
    assert "done" in drain(tab.run(2, "web", *values))[1]
    assert "done" in drain(tab.run(3, "web", *values))[1]
    shown = tab.next(3, "web")
    intro = shown[2 + sum(3 + len(p.fields) for p in tab.steps[:4]) + 1]
    assert "Memory estimate" in intro and "trainable parameters" in intro and "GiB" in intro
    # Another name is another setup: it starts at step 1.
    assert tab.open_setup("other")[0] == 0


@pytest.fixture(scope="module")
def trainer_web(tmp_path_factory):
    """`localqwen web` with the trainer plugin, as a user starts it."""
    home = tmp_path_factory.mktemp("wizard_web_home")
    # OMP_NUM_THREADS=1: the training process the page starts inherits it; one thread steps the tiny
    # model far faster than two competing for the cores (see tests/training/test_training_jobs.py).
    with served_web({"LOCALQWEN_HOME": str(home), "LOCALQWEN_PLUGINS": "trainer", "OMP_NUM_THREADS": "1"},
                    base_port=17960) as view:
        yield view.url


def step_field_names() -> list[str]:
    """The page's fields, every step's, in order (what the run endpoint takes after the name)."""
    from localqwen_trainer.plugin import Trainer

    from localqwen.plugin_api import form_fields

    plugin = Trainer()
    flow = plugin.guided_flow()
    return [spec.name for step in flow.steps for spec in form_fields(plugin.action(step.action).form)
            if spec.name != flow.name_field]


def client_steps(url: str, name: str, steps: int, words: Path, tiny: Path) -> list[tuple]:
    """Run the first ``steps`` wizard steps through gradio_client as the page does (open the setup,
    Run, Next...); the step a session is on is session state. Returns each run's outputs:
    (status, progress, text, gallery, plot, files, step bar); the job id is state, not sent."""
    from gradio_client import Client, handle_file


    names = step_field_names()
    client = Client(url, verbose=False)
    params = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/wizard_trainer_run"]["parameters"]
    assert len(params) == 1 + len(names)  # the name, then the fields (the step index is session state)
    given = {"model": str(tiny), "max_steps": 4, "compare_rows": 2, "max_rows": 3, "max_new_tokens": 3}
    values = [given.get(n, p.get("parameter_default")) for n, p in zip(names, params[1:], strict=True)]
    client.predict(name, api_name="/wizard_trainer_open")
    results = []
    for index in range(steps):
        step_values = list(values)
        if index == 1:  # the data step: the file as the page uploads it
            step_values[names.index("file")] = handle_file(str(words))
        results.append(client.predict(name, *step_values, api_name="/wizard_trainer_run"))
        if index < steps - 1:
            client.predict(name, api_name="/wizard_trainer_next")
    return results


@pytest.mark.browser
@pytest.mark.slow
def test_real_browser_trains_in_the_wizard(trainer_web, browser, tmp_path, tiny_qwen3_path):
    """`localqwen web` as a user starts it. Steps 1-4 through gradio_client (the page's own
    endpoints), then Chromium: the page opens at step 5, Start training ends "done" (the adapter
    folder handed to gr.File left "Error" in every panel and the status at "running"), then the
    evaluation through the API compares base and tuned."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    words = tmp_path / "words.jsonl"
    words.write_text(words_rows())
    client_steps(trainer_web, "default", 4, words, tiny_qwen3_path)
    driver = browser
    driver.get(trainer_web)
    wait = WebDriverWait(driver, 120)
    wait.until(ec.element_to_be_clickable((By.XPATH, "//button[@role='tab'][contains(., 'Trainer')]"))).click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "wizard-header-trainer"), "Step 5 of 6: Run"))
    header = driver.find_element(By.ID, "wizard-header-trainer").text
    assert "✓ 4. Hyperparameters" in header
    assert "Memory estimate" in driver.find_element(By.ID, "wizard-intro-trainer-run").text
    wait.until(ec.element_to_be_clickable((By.ID, "wizard-run-trainer"))).click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "wizard-status-trainer"), "done"))
    assert "Error" not in driver.find_element(By.ID, "wizard-status-trainer").text
    # The charts: the page may draw them a moment after the status says done (seen on a loaded machine).
    wait.until(ec.visibility_of_element_located((By.ID, "wizard-metrics-trainer")))
    driver.set_window_size(1400, 2200)  # the step bar, the estimate and the charts in one picture
    driver.execute_script("window.scrollTo(0, 0)")
    time.sleep(0.5)
    assert "📁" in driver.find_element(By.ID, "wizard-output-trainer").text  # the adapter folder, listed
    shot = tmp_path / "web_wizard.png"
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("LOCALQWEN_UPDATE_SNAPSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS / "web_wizard.png")

    from gradio_client import Client

    client = Client(trainer_web, verbose=False)
    opened = client.predict("default", api_name="/wizard_trainer_open")
    assert "Step 6 of 6" in opened[0]  # the step bar (the step index is session state, not sent)
    names = step_field_names()
    params = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/wizard_trainer_run"]["parameters"]
    given = {"compare_rows": 2, "max_rows": 3, "max_new_tokens": 3}
    values = [given.get(n, p.get("parameter_default")) for n, p in zip(names, params[1:], strict=True)]
    status, _progress, text, *_rest = client.predict("default", *values, api_name="/wizard_trainer_run")
    assert "done" in status and "Held-out scores" in text and "Base vs tuned" in text
