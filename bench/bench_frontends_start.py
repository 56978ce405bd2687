"""TUI first paint and web page ready, each against a bare app of the same toolkit (same run).

TUI: from process start to the first screen painted (``run_test`` headless hands over its pilot
once the first screen is composed and painted), LocalQwen's home screen vs a bare Textual app with a header, a label and a footer.
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
import time, sys, asyncio
start = time.perf_counter()
KIND = sys.argv[1]
if KIND == "bare":
    from textual.app import App
    from textual.widgets import Footer, Header, Label

    class Bare(App):
        def compose(self):
            yield Header()
            yield Label("hello")
            yield Footer()
    app = Bare()
else:
    from localqwen.tui.app import LocalQwenApp
    app = LocalQwenApp()

async def main():
    # run_test hands over the pilot once the first screen is composed, laid out and painted.
    async with app.run_test(size=(120, 40)):
        print(time.perf_counter() - start)
asyncio.run(main())
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


def tui_first_paint(kind: str, home: str) -> float:
    out = subprocess.run([sys.executable, "-c", TUI_PROBE, kind], capture_output=True, text=True, env=_env(home),
                         cwd=ROOT, check=True)
    return float(out.stdout.strip().splitlines()[-1])


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
        for name, measure in (("tui_first_paint", tui_first_paint), ("web_page_ready", web_ready)):
            measure("bare", home)  # warm the file cache once
            bare = statistics.median(measure("bare", home) for _ in range(RUNS))
            ours = statistics.median(measure("localqwen", home) for _ in range(RUNS))
            results[name] = ours / bare
            print(f"{name}: LocalQwen {ours:.2f}s vs bare {bare:.2f}s -> ratio {ours / bare:.2f} (goal <= 1.5)")
    return results


if __name__ == "__main__":
    main()
