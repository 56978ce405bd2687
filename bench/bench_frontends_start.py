"""TUI first paint and web page ready, each against a bare app of the same toolkit (same run).

TUI: from process start to the first frame showing the first screen (headless ``run_test``, timed
in the app's display hook), LocalQwen started the way a user starts it (plain ``localqwen``: the
console script's function), whose home screen lists the plugins, vs a bare Textual app with a
header, a label and a footer. Also printed: when the home screen first shows the plugins' actions
(they load after the first frame).
Web: from process start to the page and its config being served over HTTP, ``localqwen web`` vs
a bare ``gr.Blocks`` with one textbox and one button. Median of a few runs each; goal <= 1.5.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "3"))

TUI_PROBE = r"""
import asyncio, sys, time
start = time.perf_counter()
KIND = sys.argv[1]
painted = {}


def measure(app, first_frame, interactive=None):
    # A headless run (no terminal), timed at the first frame the compositor hands to the display
    # that shows ``first_frame(app)``; for LocalQwen also the first frame with the plugins' actions.
    def post_display_hook():
        now = time.perf_counter() - start
        if "first" not in painted and first_frame(app):
            painted["first"] = now
        if interactive is not None and "interactive" not in painted and interactive(app):
            painted["interactive"] = now

    app.post_display_hook = post_display_hook

    async def run():
        async with app.run_test(size=(120, 40)) as pilot:
            wanted = {"first", "interactive"} if interactive is not None else {"first"}
            while not wanted <= set(painted) and time.perf_counter() - start < 120:
                await pilot.pause(0.01)

    asyncio.run(run())


if KIND == "bare":
    from textual.app import App
    from textual.widgets import Footer, Header, Label

    class Bare(App):
        def compose(self):
            yield Header()
            yield Label("hello")
            yield Footer()

    Bare.run = lambda self, **_: measure(self, lambda app: bool(app.screen.query(Label)))
    Bare().run()
else:
    # What a user runs: plain ``localqwen``, i.e. the console script's target from pyproject.toml,
    # with the app's run() swapped for the measured headless run.
    import importlib
    import re

    with open("pyproject.toml", encoding="utf-8") as handle:
        target = re.search(r'^localqwen = "([\w.]+):(\w+)"$', handle.read(), re.M)
    main = getattr(importlib.import_module(target[1]), target[2])
    from localqwen.tui.app import LocalQwenApp

    def home_painted(app):  # the home screen listing the plugins: by name first, then as cards
        return type(app.screen).__name__ == "HomeScreen" and bool(app.screen.query("#home-offered, .plugin-card"))

    def home_interactive(app):
        return home_painted(app) and bool(app.screen.query(".action-button"))

    LocalQwenApp.run = lambda self, **_: measure(self, home_painted, home_interactive)
    sys.argv = ["localqwen"]
    main()
print(painted["first"], painted.get("interactive", ""))
"""

WEB_BARE = r"""
import os, sys
import gradio as gr
with gr.Blocks() as demo:
    box = gr.Textbox()
    gr.Button("Run").click(lambda x: x, box, box)
demo.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]), prevent_thread_lock=True, quiet=True, ssr_mode=False)
print("ready", flush=True)
demo.block_thread()
"""


def _env(home: str) -> dict[str, str]:
    return dict(os.environ, LOCALQWEN_HOME=home, GRADIO_ANALYTICS_ENABLED="False", LANG="en_US.UTF-8",
                GRADIO_TEMP_DIR=str(Path(home) / "gradio-bare"))


def tui_paint_times(kind: str, home: str) -> tuple[float, float | None]:
    """(first frame of the home screen, first frame with the plugins' actions; None for the bare app)."""
    out = subprocess.run([sys.executable, "-c", TUI_PROBE, kind], capture_output=True, text=True, env=_env(home),
                         cwd=ROOT, check=True)
    first, _, interactive = out.stdout.strip().splitlines()[-1].partition(" ")
    return float(first), float(interactive) if interactive.strip() else None


def tui_first_paint(kind: str, home: str) -> float:
    return tui_paint_times(kind, home)[0]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def web_ready(kind: str, home: str) -> float:
    port = _free_port()
    if kind == "bare":
        argv = [sys.executable, "-c", WEB_BARE, str(port)]
    else:
        argv = [sys.executable, "-m", "localqwen.cli.main", "web", "--port", str(port)]
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=_env(home), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = start + 180
        while time.perf_counter() < deadline:
            try:
                for path in ("/", "/config"):
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
                        response.read()
                return time.perf_counter() - start
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{kind} web app did not become ready")
    finally:
        process.terminate()
        process.wait(10)


def main() -> dict[str, float]:
    results = {}
    with tempfile.TemporaryDirectory() as home:
        for name, measure in (("tui_first_paint", tui_paint_times), ("web_page_ready", web_ready)):
            measure("bare", home)  # warm the file cache once
            bare_runs, our_runs = [], []
            for _ in range(RUNS):  # alternated, so a busy moment of the machine hits both alike
                bare_runs.append(measure("bare", home))
                our_runs.append(measure("localqwen", home))
            if name == "tui_first_paint":
                interactive = statistics.median(run[1] for run in our_runs)
                bare_runs, our_runs = [run[0] for run in bare_runs], [run[0] for run in our_runs]
            bare, ours = statistics.median(bare_runs), statistics.median(our_runs)
            results[name] = ours / bare
            print(f"{name}: LocalQwen {ours:.2f}s vs bare {bare:.2f}s -> ratio {ours / bare:.2f} (goal <= 1.5)")
            if name == "tui_first_paint":
                print(f"  (LocalQwen's home shows the plugins' actions at {interactive:.2f}s)")
    return results


if __name__ == "__main__":
    main()
