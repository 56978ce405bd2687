"""Both home screens mark a plugin whose needs this (simulated) machine does not meet, with the reason:
the TUI through the pilot, the web view through the handler its page load runs."""

from __future__ import annotations

import asyncio

import pytest
from pilot_waits import wait_for

from localqwen.app import Workbench
from localqwen.i18n import set_language
from localqwen.runtime.device import DeviceManager
from localqwen.runtime.host import HostInfo

# 4.5 GB free, less the 2 GB the device plan leaves to the OS and the app: 2.5 GB for a model. The
# built-in chat (2 GB) and RAG (2.5 GB) fit, the captioner (3 GB) and the trainer (4 GB) do not.
SMALL_LAPTOP = HostInfo(cpu_cores=4, ram_total_gb=8.0, ram_available_gb=4.5, cpu_flags={"avx2"}, llama_cpp=True)
CAPTIONER_MARK = "⚠ May not run here: needs about 3 GB of memory; this machine has 2.5 GB available (RAM)"


@pytest.fixture
def bench(frontend_plugins, monkeypatch):
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "chat,captioner,rag,trainer,testplug")
    bench = Workbench.create()
    bench.services.device = DeviceManager(probe=lambda: SMALL_LAPTOP)
    return bench


def test_tui_home_marks_the_plugins_this_machine_cannot_run(bench):
    from localqwen.tui.app import LocalQwenApp

    async def scenario() -> None:
        app = LocalQwenApp(bench)
        async with app.run_test(size=(130, 60)) as pilot:
            await wait_for(pilot, lambda: getattr(app.screen, "fits", None) is not None
                           and app.screen.query("#fit-captioner"))
            home = app.screen
            # Marked in place, inside the plugin's own card.
            assert str(home.query_one("#plugin-captioner #fit-captioner").render()) == CAPTIONER_MARK
            assert "needs about 4 GB" in str(home.query_one("#plugin-trainer #fit-trainer").render())
            assert "No CUDA GPU" in str(home.query_one("#fit-note-trainer").render())
            assert not home.query("#fit-chat, #fit-rag, #fit-testplug")
            # A rebuilt home (language switch) keeps the marks, in the new language.
            app.change_language("zh")
            await wait_for(pilot, lambda: app.screen.query("#fit-captioner")
                           and "本机可能无法运行" in str(app.screen.query_one("#fit-captioner").render()))

    try:
        asyncio.run(scenario())
    finally:
        set_language("auto")


def test_web_home_marks_them_when_the_page_loads(bench):
    from localqwen.web.app import build_web_app

    web = build_web_app(bench)
    loads = [fn for fn in web.blocks.fns.values()
             if any(getattr(out, "elem_id", None) == "home-plugins" for out in fn.outputs)]
    assert len(loads) == 1  # the page-load handler that checks the plugins' needs
    markdown = loads[0].fn()
    assert f"  - {CAPTIONER_MARK}" in markdown
    assert "needs about 4 GB of memory" in markdown and "No CUDA GPU" in markdown
    chat_line = next(line for line in markdown.splitlines() if "(`chat`)" in line)
    following = markdown.split(chat_line, 1)[1].splitlines()[1]
    assert not following.startswith("  - ")  # the chat fits: no mark under it
