"""SVG snapshots of the main TUI screens, compared with the files in ``tests/frontends/snapshots``.

After an intended change of the UI, refresh them (and the README screenshots) with
``LOCALQWEN_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/frontends/test_frontends_tui_snapshots.py``
and review the new files before committing. A mismatch leaves ``<name>.actual.svg`` beside the
stored file (git-ignored) to compare.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

import pytest
from pilot_waits import wait_for

SNAPSHOTS = Path(__file__).parent / "snapshots"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
UPDATE = os.environ.get("LOCALQWEN_UPDATE_SNAPSHOTS") == "1"
# The settings screen shows the data folders, so the snapshots use one fixed home.
FIXED_HOME = Path("/tmp/localqwen-snapshot-home")
SIZE = (120, 36)


_TEXT = re.compile(r'<text[^>]*?x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>')


def _normalise(svg: str) -> list[tuple[str, str, str]]:
    """What is written where. Colours are left out on purpose: hover and focus tints depend on
    timing in a headless run, while text and layout are what a snapshot should guard."""
    return _TEXT.findall(svg)


def check_snapshot(name: str, svg: str) -> None:
    stored = SNAPSHOTS / f"{name}.svg"
    if UPDATE or not stored.exists():
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        stored.write_text(svg, encoding="utf-8")
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(stored, DOCS / f"tui_{name}.svg")
        if not UPDATE:
            pytest.fail(f"no stored snapshot for {name}; wrote {stored}, review and commit it")
        return
    if _normalise(stored.read_text(encoding="utf-8")) != _normalise(svg):
        actual = SNAPSHOTS / f"{name}.actual.svg"
        actual.write_text(svg, encoding="utf-8")
        pytest.fail(f"TUI screen '{name}' changed: compare {actual} with {stored} "
                    "(LOCALQWEN_UPDATE_SNAPSHOTS=1 accepts the change)")


async def stable_screenshot(app, pilot) -> str:
    """The screen once two exports 0.2 s apart agree (the footer settles a moment after focus moves)."""
    previous = app.export_screenshot(simplify=True)
    for _ in range(15):
        await pilot.pause(0.2)
        current = app.export_screenshot(simplify=True)
        if _normalise(current) == _normalise(previous):
            return current
        previous = current
    return previous


@pytest.fixture
def snapshot_app(frontend_plugins, monkeypatch):
    shutil.rmtree(FIXED_HOME, ignore_errors=True)
    monkeypatch.setenv("LOCALQWEN_HOME", str(FIXED_HOME))
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "testplug,showcase,broken_import,broken_register")
    (FIXED_HOME / "config").mkdir(parents=True)
    (FIXED_HOME / "config" / "config.toml").write_text('[app]\nlanguage = "en"\n', encoding="utf-8")
    from localqwen.app import Workbench
    from localqwen.tui.app import LocalQwenApp

    yield lambda: LocalQwenApp(Workbench.create())
    shutil.rmtree(FIXED_HOME, ignore_errors=True)


async def showcase_run(app) -> None:
    async with app.run_test(size=(120, 48)) as pilot:
        app.open_action(app.bench.host.get("showcase"), "everything")
        await wait_for(pilot, lambda: bool(app.screen.query("#run")))
        await app.screen.action_run()
        await wait_for(pilot, lambda: app.screen.event_view.done is not None)
        app.set_focus(None)
        DOCS.mkdir(parents=True, exist_ok=True)
        (DOCS / "tui_events.svg").write_text(await stable_screenshot(app, pilot), encoding="utf-8")


def test_main_screens_match_snapshots(snapshot_app):
    async def scenario() -> dict[str, str]:
        app = snapshot_app()
        shots: dict[str, str] = {}
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: getattr(app.screen, "plugins", None) is not None)
            shots["home"] = await stable_screenshot(app, pilot)
            app.open_action(app.bench.host.get("testplug"), "echo")
            await pilot.pause(0.2)
            app.screen.form_view.set_value("repeat", 3)
            await app.screen.action_run()  # the required text is missing: its message shows beside it
            await pilot.pause(0.2)
            app.set_focus(None)
            await pilot.pause(0.4)
            shots["action_form"] = await stable_screenshot(app, pilot)
            for mode in ("jobs", "settings"):
                app.switch_mode(mode)
                await pilot.pause(0.2)
                app.set_focus(None)
                await pilot.pause(0.4)
                shots[mode] = await stable_screenshot(app, pilot)
        return shots

    shots = asyncio.run(scenario())
    again = asyncio.run(scenario())
    if UPDATE:  # a README picture of a finished run (timings vary, so it is not compared)
        asyncio.run(showcase_run(snapshot_app()))
    failures = []
    for name, svg in shots.items():
        assert _normalise(svg) == _normalise(again[name]), f"screen '{name}' is not deterministic"
        try:
            check_snapshot(name, svg)
        except pytest.fail.Exception as exc:
            failures.append(str(exc))
    assert not failures, failures


def test_chat_screen_matches_snapshot(snapshot_app, monkeypatch):
    """The chat screen talking to the test chat plugin: a step panel, a tool call, the answer."""
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "chat,parrot")

    async def scenario() -> str:
        shutil.rmtree(FIXED_HOME / "data", ignore_errors=True)  # each run starts with no chat history
        app = snapshot_app()
        async with app.run_test(size=SIZE) as pilot:
            app.open_chat("parrot")
            await wait_for(pilot, lambda: getattr(app.screen, "plugin_id", None) == "parrot")
            screen = app.screen
            screen.query_one("#chat-input").value = "hello there"
            await screen.action_send()
            await wait_for(pilot, lambda: not screen.busy)
            app.set_focus(None)
            await pilot.pause(0.4)
            return await stable_screenshot(app, pilot)

    shot = asyncio.run(scenario())
    assert _normalise(shot) == _normalise(asyncio.run(scenario())), "the chat screen is not deterministic"
    check_snapshot("chat", shot)
