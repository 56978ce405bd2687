"""The trainer's guided flow in the TUI (Textual pilot), with the real trainer plugin and a tiny Qwen3.

The fast test walks steps 1-4 and looks at step 5 without training: step k of n, the setup name
kept across steps, lists with greyed-out entries and their reason, re-running step 1 keeping step
2 done, the memory estimate before Run. The slow one trains and evaluates.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_frontends_tui import async_test, home_ready, wait_for
from textual.widgets import Button, DataTable, Input, Label, Select, Sparkline, Static

from localqwen.app import Workbench
from localqwen.tui.app import LocalQwenApp
from localqwen.tui.event_view import EventView
from localqwen.tui.screens.wizard import ChoiceList, WizardScreen
from localqwen.tui.widgets.image_block import ImageBlock

SIZE = (150, 60)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


async def readme_picture(app, pilot, name: str) -> None:
    """With LOCALQWEN_UPDATE_SNAPSHOTS=1, the screen as an SVG for the README."""
    if os.environ.get("LOCALQWEN_UPDATE_SNAPSHOTS") == "1":
        await pilot.pause(0.5)
        DOCS.mkdir(parents=True, exist_ok=True)
        (DOCS / f"{name}.svg").write_text(app.export_screenshot(simplify=True), encoding="utf-8")


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "trainer")  # the others would only slow the home screen
    # The run step's training process inherits this: one thread steps the tiny model far faster
    # than two competing with this process for the cores (see tests/training/test_training_jobs.py).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return LocalQwenApp(Workbench.create())


@pytest.fixture
def words_file(tmp_path):
    rows = [{"messages": [{"role": "user", "content": f"Say the word number {i % 3}."},
                          {"role": "assistant", "content": ["zero", "one", "two"][i % 3]}]} for i in range(24)]
    path = tmp_path / "words.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def step_title(screen) -> str:
    return str(screen.query_one("#step-title", Label).render())


def step_bar(screen) -> str:
    return str(screen.query_one("#step-bar", Static).render())


async def view_ready(pilot, screen) -> None:
    await wait_for(pilot, lambda: screen.view is not None, timeout=60)
    await pilot.pause(0.1)


async def run_step(pilot, screen) -> None:
    await pilot.click("#run")
    await wait_for(pilot, lambda: screen.job is not None and screen.job.finished, timeout=120)
    await wait_for(pilot, lambda: not screen.query_one("#run", Button).disabled)
    assert screen.job.status == "ok", screen.event_view.errors or screen.job.summary


async def move(pilot, screen, button: str) -> None:
    await pilot.click(f"#{button}")
    await wait_for(pilot, lambda: screen.view is None or screen.query("#step-loading"))
    await view_ready(pilot, screen)


@async_test
async def test_a_stale_view_is_not_shown_into_a_rebuilt_or_left_step(app):
    """The step's view is loaded in a thread and shown over several awaits. A view loaded before the
    step was rebuilt (a setup picked by name) or the screen left (Escape) must not be shown: into the
    new form it mounted its lists twice (DuplicateIds), into a removed one it crashed the app with
    NoMatches (seen under load in the palette test)."""
    async with app.run_test(size=SIZE) as pilot:
        await home_ready(pilot, app)
        await pilot.click("#wizard-trainer")
        screen = app.screen
        await view_ready(pilot, screen)
        old_view, old_serial = screen.view, screen._view_serial
        await screen._rebuild()  # the form is composed anew and its view loaded again
        await screen._show_view(old_view, old_serial)  # the old load arriving late: dropped
        await view_ready(pilot, screen)
        assert screen._view_serial == old_serial + 1 and len(screen.query("#choices-model")) == 1
        form, serial = screen.form_view, screen._view_serial
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, WizardScreen))
        assert not screen._showing(serial, form)
        await screen._show_view(screen.view, serial)  # arriving after the screen was left: dropped
        assert app.is_running


@async_test
async def test_the_wizard_walks_the_steps_keeps_the_name_and_greys_out_what_cannot_run(app, tiny_qwen3_path,
                                                                                     words_file):
    async with app.run_test(size=SIZE) as pilot:
        await home_ready(pilot, app)
        await pilot.click("#wizard-trainer")
        screen = app.screen
        assert isinstance(screen, WizardScreen)
        await view_ready(pilot, screen)
        assert step_title(screen) == "Step 1 of 6: Base model"
        assert screen.query_one("#back", Button).disabled  # nothing before step 1
        # The catalog's models are offered; not downloaded ones are greyed out with the command to get them.
        models = screen.query_one("#choices-model", ChoiceList)
        greyed = [o for o in models._options if o.disabled]
        assert greyed and "localqwen models download" in str(greyed[0].prompt)
        assert screen.focused is models  # typing starts in the step's list
        # A name typed once stays for every step.
        name = screen.query_one("#wizard-name", Input)
        name.value = "words"
        screen.form_view.set_value("model", str(tiny_qwen3_path))
        await run_step(pilot, screen)
        assert step_bar(screen).startswith("▶✓ 1. Base model  · 2. Data")

        await move(pilot, screen, "next")
        assert step_title(screen) == "Step 2 of 6: Data"
        assert screen.query_one("#wizard-name", Input).value == "words"
        sources = screen.query_one("#choices-source", ChoiceList)
        assert any("synthetic-shapes" in str(o.prompt) for o in sources._options)
        screen.form_view.set_value("file", str(words_file))
        await run_step(pilot, screen)

        # Back to step 1: its values come back, and running it again keeps step 2 done.
        await move(pilot, screen, "back")
        assert step_title(screen) == "Step 1 of 6: Base model"
        assert screen.form_view.values()["model"] == str(tiny_qwen3_path.resolve())
        await run_step(pilot, screen)
        assert "✓ 2. Data" in step_bar(screen)

        await move(pilot, screen, "next")
        await move(pilot, screen, "next")
        assert step_title(screen) == "Step 3 of 6: Method"
        methods = screen.query_one("#choices-method", ChoiceList)
        qlora = next(o for o in methods._options if "qlora" in str(o.prompt))
        assert qlora.disabled and "CUDA" in str(qlora.prompt)  # this machine has no GPU
        assert not screen.query_one("#field-method", Select).display  # the list replaces the drop-down
        # A tiny model learns only with all weights trained: the suggestion is prefilled.
        assert screen.form_view.values()["method"] == "full"
        lora = next(i for i, o in enumerate(methods._options) if str(o.prompt).startswith("lora"))
        methods.focus()
        methods.highlighted = lora
        await pilot.press("enter")
        assert screen.form_view.values()["method"] == "lora"
        await readme_picture(app, pilot, "tui_wizard_method")
        await run_step(pilot, screen)

        await move(pilot, screen, "next")
        assert step_title(screen) == "Step 4 of 6: Hyperparameters"
        presets = screen.query_one("#choices-preset", ChoiceList)
        assert "learning rate 0.005 for lora" in str(presets._options[0].prompt)  # tiny model: larger steps
        screen.form_view.set_value("max_steps", 2)
        await run_step(pilot, screen)

        await move(pilot, screen, "next")
        assert step_title(screen) == "Step 5 of 6: Run"
        assert str(screen.query_one("#run", Button).label) == "Start training"
        # The memory estimate is there before Run, each value with its unit.
        intro = screen.query_one("#intro", EventView)
        table = intro.query_one(DataTable)
        rows = {table.get_row_at(i)[0]: table.get_row_at(i)[1] for i in range(table.row_count)}
        assert rows["total"].endswith("GiB") and "GiB" not in rows["trainable parameters"]
        assert screen.query_one("#next", Button).disabled is False
        assert step_bar(screen).startswith("✓ 1. Base model  ✓ 2. Data  ✓ 3. Method  ✓ 4. Hyperparameters  ▶ 5. Run  · 6.")


@pytest.mark.slow
@async_test
async def test_the_wizard_trains_with_one_live_chart_and_compares_base_and_tuned(app, tiny_qwen3_path, words_file):
    bench = app.bench
    for action, values in (("model", {"model": str(tiny_qwen3_path)}), ("data", {"file": str(words_file)}),
                           ("method", {"method": "lora"}), ("hyperparameters", {"max_steps": 6})):
        done = list(bench.run("trainer", action, values))[-1]
        assert done.status == "ok", done.summary
    async with app.run_test(size=SIZE) as pilot:
        await home_ready(pilot, app)
        await pilot.click("#wizard-trainer")
        screen = app.screen
        await view_ready(pilot, screen)
        assert step_title(screen) == "Step 5 of 6: Run"  # a returning user continues where they stopped
        await run_step(pilot, screen)
        view = screen.event_view
        # One sparkline per quantity (not one per logged number), and one loss chart image updated in place.
        charts = view.query(Sparkline)
        assert 1 <= len(charts) <= 6 and view.query_one("#metric-loss", Sparkline)
        assert len(view.query(ImageBlock)) == 1
        assert not screen.query_one("#next", Button).disabled
        await readme_picture(app, pilot, "tui_wizard_run")

        await move(pilot, screen, "next")
        assert step_title(screen) == "Step 6 of 6: Evaluate and export"
        screen.form_view.set_value("compare_rows", 2)
        screen.form_view.set_value("max_rows", 3)
        screen.form_view.set_value("max_new_tokens", 3)
        await run_step(pilot, screen)
        titles = [str(label.render()) for label in screen.event_view.query(".table-title").results(Label)]
        assert "Base vs tuned" in titles
