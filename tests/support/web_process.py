"""`localqwen web` in a subprocess and a headless Chromium, as the web tests start them.

One place for what every launched-web-view test needs: start the real server on a free loopback
port, read its stdout until it prints its address, stop it afterwards; and a real Chromium
(Debian's chromium + chromedriver) with the flags the project allows, on a fresh profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
URL_LINE = "LocalQwen web view: "
PORT_BLOCK = 2000  # each xdist worker's ports: the tests' base ports span 17860-18960
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run")


@dataclass
class WebView:
    url: str
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)  # what the server printed up to its address

    @property
    def port(self) -> int:
        return int(self.url.rstrip("/").rsplit(":", 1)[1])


def worker_port(base: int) -> int:
    """``base`` moved into this pytest-xdist worker's own block of ports. Tests of one module run
    on both workers, so a module's server fixture starts twice at once: each worker found the same
    port free, and one bound it (or a socket blocking it) while the other's server was starting
    there ("Cannot find empty port", 2026-12-03)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return base + PORT_BLOCK * int(worker or 0)


def start_web(env: dict[str, str], *args: str, base_port: int, exact_port: bool = False,
              timeout: float = 120) -> WebView:
    """Start ``localqwen web --port <free port from base_port> *args`` and wait for its address.

    ``env`` is added to this process's environment (LOCALQWEN_HOME, LOCALQWEN_PLUGINS ...);
    ``exact_port`` hands ``base_port`` over as it is (to test the server's own busy-port rule; the
    caller moves it into its worker's block), else it starts from :func:`worker_port`."""
    from localqwen.web.server import choose_port

    port = base_port if exact_port else choose_port("127.0.0.1", worker_port(base_port))
    # One torch thread (unless ``env`` says otherwise): a tiny model on two threads competing with
    # this process and Chromium for 2 cores ran 20-90x slower a step (tests/training/test_training_jobs.py).
    process = subprocess.Popen([sys.executable, "-m", "localqwen.cli.main", "web", "--port", str(port), *args],
                               env={**os.environ, "LANG": "en_US.UTF-8", "OMP_NUM_THREADS": "1", **env}, cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(URL_LINE):
            return WebView(line.split(": ", 1)[1].strip(), process, lines)
    process.kill()
    pytest.fail("web view did not start:\n" + "".join(lines))


def stop_web(view: WebView) -> None:
    view.process.terminate()
    try:
        view.process.wait(10)
    except subprocess.TimeoutExpired:
        view.process.kill()


@contextmanager
def served_web(env: dict[str, str], *args: str, base_port: int) -> Iterator[WebView]:
    view = start_web(env, *args, base_port=base_port)
    try:
        yield view
    finally:
        stop_web(view)


@contextmanager
def chromium(profile_dir: Path, window: str = "1400,1000") -> Iterator[object]:
    """A real headless Chromium driven through Selenium, on a fresh profile; fails (not skips)
    without it, because the browser tests are part of the suite."""
    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not binary or not driver_path:
        pytest.fail("Debian's chromium and chromium-driver are needed: run `make browser`")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*CHROMIUM_FLAGS, f"--window-size={window}", f"--user-data-dir={profile_dir}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
