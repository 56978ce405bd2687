"""Streaming throughput with a UI attached / headless, on the same work in the same run (goal >= 0.95).

1. Chat on the tiny Qwen3 (built locally, real transformers engine, greedy): tokens per second
   when the answer streams into the TUI chat view (headless Textual pilot) and through the web
   chat handler, divided by the engine's own streaming rate.
2. For information: how many text deltas per second the TUI action view renders from a plugin
   that generates text without doing any work (the frontend tests' ``showcase generate``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "frontends" / "support")]
os.environ.setdefault("OMP_NUM_THREADS", "1")
MAX_TOKENS = int(os.environ.get("BENCH_TOKENS", "600"))
PLUGIN_TOKENS = int(os.environ.get("BENCH_PLUGIN_TOKENS", "20000"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
PROMPT = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]


def _engine(folder: Path):
    from localqwen.app import Workbench
    from localqwen.runtime.engine import load_engine
    from localqwen.testing.tiny_models import build_tiny_qwen3

    services = Workbench.create().services
    return load_engine(build_tiny_qwen3(folder / "tiny"), models=services.models, device=services.device,
                       runtime=services.config.runtime, backend="transformers")


def _settings():
    from localqwen.runtime.engine import GenerationSettings

    return GenerationSettings(max_new_tokens=MAX_TOKENS)


def headless_rate(engine) -> tuple[float, int]:
    start = time.perf_counter()
    for _ in engine.stream(PROMPT, settings=_settings()):
        pass
    tokens = engine.last_result.completion_tokens
    return tokens / (time.perf_counter() - start), tokens


def _chat_bench(engine):
    """A workbench whose plain chat plugin answers with ``engine``, up to MAX_TOKENS tokens."""
    from localqwen.app import Workbench

    bench = Workbench.create()
    bench.paths.ensure()
    bench.set_config("plugins.chat", "max_new_tokens", MAX_TOKENS)
    bench.services.engine = lambda model=None, **kwargs: engine  # the engine built once in main()
    return bench


def tui_chat_rate(engine) -> float:
    from localqwen.tui.app import LocalQwenApp

    app = LocalQwenApp(_chat_bench(engine))

    async def scenario() -> float:
        async with app.run_test(size=(120, 40)) as pilot:
            app.open_chat("chat")
            while getattr(app.screen, "plugin_id", None) != "chat":
                await pilot.pause(0.05)
            screen = app.screen
            await screen.action_new_session()  # an empty conversation each run, like the headless one
            await pilot.pause()
            screen.query_one("#chat-input").value = PROMPT[0]["content"]
            start = time.perf_counter()
            await screen.action_send()
            while screen.busy:  # a plain sleep: the pilot's pause would add its own work
                await asyncio.sleep(0.005)
            elapsed = time.perf_counter() - start
            return engine.last_result.completion_tokens / elapsed

    return asyncio.run(scenario())


def web_chat_rate(engine) -> float:
    from localqwen.web.app import build_web_app

    web = build_web_app(_chat_bench(engine))
    session = web.bench.conversations.new_session("chat")
    start = time.perf_counter()
    for _ in web.chat.send({"text": PROMPT[0]["content"], "files": []}, "chat", session):
        pass
    return engine.last_result.completion_tokens / (time.perf_counter() - start)


def plugin_rates() -> tuple[float, float]:
    from lqf_showcase.plugin import ShowcasePlugin

    from localqwen.app import Workbench
    from localqwen.plugin_api import PluginHost

    host = PluginHost(use_entry_points=False)
    host.add(ShowcasePlugin)
    bench = Workbench.create(host=host)
    start = time.perf_counter()
    for _ in bench.run("showcase", "generate", {"tokens": PLUGIN_TOKENS}):
        pass
    headless = PLUGIN_TOKENS / (time.perf_counter() - start)

    from localqwen.tui.app import LocalQwenApp

    app = LocalQwenApp(bench)

    async def scenario() -> float:
        async with app.run_test(size=(120, 40)) as pilot:
            app.open_action(host.get("showcase"), "generate")
            await pilot.pause()
            screen = app.screen
            screen.form_view.set_value("tokens", PLUGIN_TOKENS)
            start = time.perf_counter()
            await screen.action_run()
            while screen.event_view.done is None:
                await asyncio.sleep(0.005)
            return PLUGIN_TOKENS / (time.perf_counter() - start)

    return asyncio.run(scenario()), headless


def main() -> dict[str, float]:
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as home:
        os.environ["LOCALQWEN_HOME"] = home
        engine = _engine(Path(home))
        headless_rate(engine)  # warm-up
        # Alternate the runs and take medians: the machine is shared, so one run can be unlucky.
        base, tui, web = [], [], []
        tokens = 0
        for _ in range(RUNS):
            rate, tokens = headless_rate(engine)
            base.append(rate)
            tui.append(tui_chat_rate(engine))
            web.append(web_chat_rate(engine))
        base_rate, tui_rate, web_rate = (statistics.median(x) for x in (base, tui, web))
        print(f"tiny Qwen3, {tokens} tokens, median of {RUNS}: headless {base_rate:.0f} tok/s, "
              f"TUI chat {tui_rate:.0f} tok/s, web chat handler {web_rate:.0f} tok/s")
        results["chat_tui_over_headless"] = tui_rate / base_rate
        results["chat_web_over_headless"] = web_rate / base_rate
        plugin_tui, plugin_headless = plugin_rates()
        # Informational: the plugin does no work, so this is the TUI's rendering rate, not a ratio goal.
        print(f"plugin text stream, {PLUGIN_TOKENS} deltas: headless {plugin_headless:.0f}/s, "
              f"rendered by the TUI action view {plugin_tui:.0f}/s")
    for name, ratio in results.items():
        print(f"{name}: {ratio:.2f} (goal >= 0.95)")
    return results


if __name__ == "__main__":
    main()
