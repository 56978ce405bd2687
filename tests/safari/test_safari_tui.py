"""The Safari screen in the real TUI (Textual pilot): opened from the home screen, an expert game
watched and stepped, a GIF exported, the saved episode reopened, and a mission played by keys."""

from __future__ import annotations

import asyncio

import pytest
from pilot_waits import click_when_laid_out, wait_for

SIZE = (130, 44)


async def open_safari(pilot, app):
    """From the home screen to the Safari screen, as a user clicks."""
    from localqwen_safari.tui import SafariScreen

    await wait_for(pilot, lambda: app.screen.query("#view-safari"))
    await click_when_laid_out(pilot, "#view-safari")
    await wait_for(pilot, lambda: isinstance(app.screen, SafariScreen))
    return app.screen


def status_of(screen) -> str:
    from textual.widgets import Static

    return str(screen.query_one("#status", Static).render())


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
            screen = await open_safari(pilot, app)

            # watch the expert
            await click_when_laid_out(pilot, "#watch")
            await wait_for(pilot, lambda: screen.frames)
            await pilot.press("space")  # pause
            assert not screen.playing
            start = screen.index
            await pilot.press("full_stop")
            assert screen.index == start + 1 and f"Turn {start + 2}/25" in status_of(screen)
            await pilot.press("comma")
            assert screen.index == start and "paused" in status_of(screen)
            assert "Thought:" in str(screen.query_one("#thought", Static).render())
            assert screen.query_one("#map", CellPicture).strips and len(screen.query_one("#map", CellPicture).strips) == 32
            await pilot.press("plus", "plus")
            assert screen.speed == 3
            await pilot.press("space")
            await wait_for(pilot, lambda: screen.index > start + 1)
            await pilot.press("space")
            # export the GIF
            await click_when_laid_out(pilot, "#gif")
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
            await click_when_laid_out(pilot, "#open")
            await wait_for(pilot, lambda: screen.frames)
            assert len(screen.frames) == turns and "checked against its world" in status_of(screen)
            # a broken file says why
            broken = saved.with_name("broken.jsonl")
            broken.write_text(saved.read_text()[:-20])
            screen.query_one("#episode-path", Input).value = str(broken)
            await click_when_laid_out(pilot, "#open")
            await wait_for(pilot, lambda: "cut off" in status_of(screen))

            # play by hand to the target, with a note on the way
            screen.query_one("#seed", Input).value = str(seed)
            await click_when_laid_out(pilot, "#play-human")
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
            assert len(screen.frames) == len(steps) + 2 and "success" in status_of(screen)
            await pilot.press("escape")
            assert not isinstance(app.screen, SafariScreen)

    asyncio.run(scenario())


def test_a_model_plays_live_stops_and_says_why_it_cannot_load(tui_app, tiny_qwen3_vl_path):
    """A real (tiny, untrained) Qwen3-VL plays in the screen: its turns show while it still
    plays, the finished game is saved, Stop ends a game between turns, and a model folder that
    does not exist is said in the status line."""
    from textual.widgets import Input, Select

    async def scenario():
        app = tui_app
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_safari(pilot, app)

            assert not screen.query_one("#model-controls").display
            screen.query_one("#policy", Select).value = "model"
            await wait_for(pilot, lambda: screen.query_one("#model-controls").display)
            screen.query_one("#model", Input).value = str(tiny_qwen3_vl_path)
            screen.query_one("#max-tokens", Input).value = "8"
            await click_when_laid_out(pilot, "#watch")
            seen_while_live: list[int] = []

            def finished() -> bool:
                if screen.live:
                    seen_while_live.append(len(screen.frames))
                return not screen.live and bool(screen.frames)

            await wait_for(pilot, finished, timeout=120)
            assert len(screen.frames) == 25 and any(0 < n < 25 for n in seen_while_live), seen_while_live
            saved = screen.outputs_dir / "watch-find-one-7-model.jsonl"
            assert saved.is_file() and f"saved {saved}" in status_of(screen)
            saved.unlink()

            screen.query_one("#max-tokens", Input).value = "512"  # long replies: the game lasts well past Stop
            await click_when_laid_out(pilot, "#watch")  # again, stopped after its first turn
            await wait_for(pilot, lambda: screen.frames, timeout=60)
            await click_when_laid_out(pilot, "#stop")
            assert not screen.live and "stopped: the game was not saved" in status_of(screen)
            shown = len(screen.frames)
            await pilot.pause(1.0)
            assert len(screen.frames) == shown < 25 and not saved.exists()

            screen.query_one("#model", Input).value = str(screen.outputs_dir / "no-such-model")
            await click_when_laid_out(pilot, "#watch")
            await wait_for(pilot, lambda: not screen.live, timeout=60)
            assert "model folder not found" in status_of(screen)

    asyncio.run(scenario())
