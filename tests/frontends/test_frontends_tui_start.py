"""The TUI started the way a user starts it (plain ``localqwen``) paints the home screen before
the config models, the plugin API, the runtime or any plugin is imported, then loads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from localqwen.i18n import catalog

PROBE = r"""
import asyncio, json, sys, time
from localqwen.cli.start import main  # the console script's function
from localqwen.tui.app import LocalQwenApp

seen = {}


def watch(app):
    def post_display_hook():
        screen = app.screen
        if "first" not in seen and type(screen).__name__ == "HomeScreen" and screen.query("#home-offered"):
            seen["first"] = {"modules": sorted(sys.modules), "intro": str(screen.query_one("#home-intro").render()),
                             "offered": str(screen.query_one("#home-offered").render())}
        if "loaded" not in seen and screen.query(".plugin-card"):  # cards come with the loaded plugins
            seen["loaded"] = sorted(widget.id for widget in screen.query(".plugin-card"))

    app.post_display_hook = post_display_hook

    async def run():
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 60
            while "loaded" not in seen and time.monotonic() < deadline:
                await pilot.pause(0.05)

    asyncio.run(run())


LocalQwenApp.run = lambda self, **_: watch(self)
sys.argv = ["localqwen"]
main()
print(json.dumps(seen))
"""


def test_first_frame_comes_before_the_heavy_imports_then_the_plugins_load(tmp_path):
    config = tmp_path / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    # The language comes from the file in the first frame, before the config models exist. A remote
    # engine means the chat plugin needs nothing of this machine, so no probe (torch) slows the test.
    config.write_text('[app]\nlanguage = "zh"\n[runtime]\nremote_url = "http://127.0.0.1:9/v1"\n', encoding="utf-8")
    env = dict(os.environ, LOCALQWEN_HOME=str(tmp_path), LOCALQWEN_PLUGINS="chat")
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    first = seen["first"]
    heavy = {"pydantic", "localqwen.config", "localqwen.plugin_api", "localqwen.app", "localqwen.services",
             "localqwen.runtime", "torch", "localqwen_chat"}
    assert not heavy & set(first["modules"]), sorted(heavy & set(first["modules"]))
    assert first["intro"] == catalog("zh")["home.intro"]  # from the plain read of the file
    assert "chat" in first["offered"]
    assert seen["loaded"] == ["plugin-chat"]


def test_the_console_script_is_the_function_tested_above():
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert '\nlocalqwen = "localqwen.cli.start:main"\n' in pyproject


def test_a_broken_config_file_is_reported_in_the_tui_once_it_is_validated(tmp_path, monkeypatch):
    """The first frame reads the file as plain TOML; the validated config, built after it, reports
    what is wrong (and the UI follows the defaults)."""
    import asyncio

    from pilot_waits import wait_for

    from localqwen.tui.app import LocalQwenApp

    monkeypatch.setenv("LOCALQWEN_HOME", str(tmp_path))
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "chat")
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    config = tmp_path / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[app]\nlanguage = "fr"\n', encoding="utf-8")

    async def scenario() -> list[str]:
        app = LocalQwenApp()
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: bool(app._notifications))
            assert app.bench.config.app.language == "auto" and app.bench.config_error is not None
            return [str(notification.message) for notification in app._notifications]

    messages = asyncio.run(scenario())
    assert any("Config file problem" in message and "language" in message for message in messages), messages
