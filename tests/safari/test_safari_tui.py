"""The Safari screen in the real TUI (Textual pilot): opened from the home screen, an expert game
watched and stepped, a GIF exported, the saved episode reopened, and a mission played by keys."""

from __future__ import annotations

import asyncio
import time

import pytest

SIZE = (130, 44)


async def wait_for(pilot, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)


@pytest.fixture
def tui_app(monkeypatch):
    from localqwen.app import Workbench
    from localqwen.tui.app import LocalQwenApp

    monkeypatch.setenv("LOCALQWEN_PLUGINS", "safari")
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    return LocalQwenApp(Workbench.create())


def test_watch_step_gif_reopen_and_play_by_keys(tui_app, short_walk):
    from localqwen_safari.tui import CellPicture, SafariScreen
    from PIL import Image
    from textual.widgets import Input, Static

    seed, steps = short_walk

    async def scenario():
        app = tui_app
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.screen.query("#view-safari"))
            await pilot.pause(0.3)
            await pilot.click("#view-safari")
            await wait_for(pilot, lambda: isinstance(app.screen, SafariScreen))
            screen = app.screen

            def status() -> str:
                return str(screen.query_one("#status", Static).render())

            # watch the expert
            await pilot.click("#watch")
            await wait_for(pilot, lambda: screen.frames)
            await pilot.press("space")  # pause
            assert not screen.playing
            start = screen.index
            await pilot.press("full_stop")
            assert screen.index == start + 1 and f"Turn {start + 2}/25" in status()
            await pilot.press("comma")
            assert screen.index == start and "paused" in status()
            assert "Thought:" in str(screen.query_one("#thought", Static).render())
            assert screen.query_one("#map", CellPicture).strips and len(screen.query_one("#map", CellPicture).strips) == 32
            await pilot.press("plus", "plus")
            assert screen.speed == 3
            await pilot.press("space")
            await wait_for(pilot, lambda: screen.index > start + 1)
            await pilot.press("space")
            # export the GIF
            await pilot.click("#gif")
            await wait_for(pilot, lambda: screen.gif_path is not None)
            gif = screen.gif_path
            assert gif == screen.outputs_dir / f"{screen.source}.gif"
            with Image.open(gif) as image:
                assert image.n_frames == len(screen.frames)
            # reopen the episode the watch saved
            saved = screen.outputs_dir / "watch-find-one-7-expert.jsonl"
            screen.query_one("#episode-path", Input).value = str(saved)
            turns = len(screen.frames)
            screen.frames = []
            await pilot.click("#open")
            await wait_for(pilot, lambda: screen.frames)
            assert len(screen.frames) == turns and "checked against its world" in status()
            # a broken file says why
            broken = saved.with_name("broken.jsonl")
            broken.write_text(saved.read_text()[:-20])
            screen.query_one("#episode-path", Input).value = str(broken)
            await pilot.click("#open")
            await wait_for(pilot, lambda: "cut off" in status())

            # play by hand to the target, with a note on the way
            screen.query_one("#seed", Input).value = str(seed)
            await pilot.click("#play-human")
            await wait_for(pilot, lambda: screen.game is not None)
            await pilot.press("n")
            assert screen.focused is screen.query_one("#notepad-input", Input)
            screen.query_one("#notepad-input", Input).value = "walking to it"
            await pilot.press("enter")
            assert screen.game.pending_notepad == "walking to it"
            await pilot.press(*steps)
            assert screen.game.episode.turn == len(steps) and screen.game.episode.notepad == "walking to it"
            await pilot.press("f")
            assert screen.game.episode.found == list(screen.game.episode.mission.targets)
            await pilot.press("d")
            assert screen.game.done and screen.game.episode.outcome == "success"
            assert (screen.outputs_dir / f"human-find-one-{seed}.jsonl").is_file()
            assert len(screen.frames) == len(steps) + 2 and "success" in status()
            await pilot.press("escape")
            assert not isinstance(app.screen, SafariScreen)

    asyncio.run(scenario())
