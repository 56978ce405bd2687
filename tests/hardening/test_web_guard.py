"""Issue 16, item 1 (DNS rebinding / cross-site requests / CORS on the web view) and item 6 (no
rate limit on failed logins, ``--max-upload abc`` traceback).

Two real ``localqwen web`` processes on loopback (one plain, one with ``--auth``), started at once,
driven with raw HTTP requests whose ``Host`` and ``Origin`` headers are what an attacker's page
would make a browser send.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from pathlib import Path

import pytest
from web_process import WebView, start_web, stop_web

SECRET = "the vault code is 7319 zebra"


def _start(home: Path, *extra: str) -> WebView:
    return start_web({"LOCALQWEN_HOME": str(home), "LOCALQWEN_PLUGINS": "rag,captioner"}, *extra,
                     base_port=18300 if not extra else 18400)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """A knowledge base holding SECRET, a folder of images, and the web view on loopback without auth."""
    plain_home = tmp_path_factory.mktemp("web_plain")
    docs = plain_home / "docs"
    docs.mkdir()
    (docs / "vault.md").write_text(f"# Vault\n\n{SECRET}.\n", encoding="utf-8")
    images = plain_home / "images"
    images.mkdir()
    from PIL import Image

    Image.new("RGB", (32, 32), "red").save(images / "red.png")
    previous = os.environ.get("LOCALQWEN_HOME")
    os.environ["LOCALQWEN_HOME"] = str(plain_home)
    try:
        from localqwen.app import Workbench

        kb = Workbench.create().services.retrieval.create("default")
        assert kb.ingest([docs]).result["added"]
    finally:
        if previous is None:
            os.environ.pop("LOCALQWEN_HOME", None)
        else:
            os.environ["LOCALQWEN_HOME"] = previous
    plain = _start(plain_home)
    try:
        yield {"plain": plain.port, "images": images, "stolen": plain_home / "stolen"}
    finally:
        stop_web(plain)


@pytest.fixture(scope="module")
def auth_port(tmp_path_factory):
    """The web view on loopback with --auth."""
    view = _start(tmp_path_factory.mktemp("web_auth"), "--auth", "alice:correct-horse")
    try:
        yield view.port
    finally:
        stop_web(view)


def request(port: int, method: str, path: str, *, host: str | None = None, origin: str | None = None,
            body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """One raw HTTP request with exactly the Host/Origin given (as a rebinding page's browser sends them)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    connection.putheader("Host", host or f"127.0.0.1:{port}")
    if origin is not None:
        connection.putheader("Origin", origin)
    for key, value in (headers or {}).items():
        connection.putheader(key, value)
    if body is not None:
        connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body)
    response = connection.getresponse()
    text = response.read().decode("utf-8", "replace")
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, text


def call_api(port: int, api_name: str, data: list, **headers_kw) -> tuple[int, str]:
    """Gradio's two-step call API: POST the inputs, then read the result stream (SSE)."""
    body = json.dumps({"data": data}).encode()
    status, _, text = request(port, "POST", f"/gradio_api/call/{api_name}", body=body,
                              headers={"Content-Type": "application/json"}, **headers_kw)
    if status != 200:
        return status, text
    event_id = json.loads(text)["event_id"]
    return request(port, "GET", f"/gradio_api/call/{api_name}/{event_id}", **headers_kw)[0::2]


SEARCH = ["vault code", "default", 5, "bm25", False]  # bm25: the server needs no embedder for the query


def caption_inputs(images: Path, out: Path) -> list:
    # source, preset, custom prompt, model, adapter, output folder, write txt, overwrite, resume, batch,
    # max tokens, max side, recursive, extensions, limit
    return [str(images), "short", "", "", "", str(out), True, False, True, 4, 96, 768, True, ".png", 0]


def test_knowledge_base_is_readable_from_the_page_itself(servers):
    """The control for the refusals below: the same search from the web view's own page reads SECRET."""
    port = servers["plain"]
    status, text = call_api(port, "run_rag_search", SEARCH, origin=f"http://127.0.0.1:{port}")
    assert status == 200 and SECRET in text


def test_dns_rebinding_host_refused(servers):
    port = servers["plain"]
    evil = f"evil.example.com:{port}"
    status, headers, text = request(port, "GET", "/", host=evil)
    assert status == 421 and "loopback" in text and "gradio" not in text.lower()
    status, text = call_api(port, "run_rag_search", SEARCH, host=evil, origin=f"http://{evil}")
    assert status == 421 and SECRET not in text
    status, text = call_api(port, "run_rag_search", SEARCH, host=evil)  # no Origin (a plain GET-style client)
    assert status == 421 and SECRET not in text


def test_dns_rebinding_cannot_run_the_captioner(servers):
    port = servers["plain"]
    evil = f"evil.example.com:{port}"
    out = servers["stolen"]
    status, text = call_api(port, "run_captioner_caption", caption_inputs(servers["images"], out),
                            host=evil, origin=f"http://{evil}")
    assert status == 421
    time.sleep(0.5)
    assert not out.exists() and not (servers["images"] / "red.txt").exists()


def test_cross_site_post_refused(servers):
    """A page on another site (or another local port) posting to 127.0.0.1 with a right Host."""
    port = servers["plain"]
    out = servers["stolen"]
    for origin in ("http://evil.example.com", "null", "http://localhost:3000"):
        status, text = call_api(port, "run_captioner_caption", caption_inputs(servers["images"], out), origin=origin)
        assert status == 403, (origin, status, text)
        status, text = call_api(port, "run_rag_search", SEARCH, origin=origin)
        assert status == 403 and SECRET not in text
    assert not out.exists()


def test_no_permissive_cors(servers):
    port = servers["plain"]
    # Gradio's own middleware echoes a foreign Origin whenever Host is not a loopback name.
    for host in (f"127.0.0.1:{port}", f"evil.example.com:{port}", f"localhost:{port}"):
        for method, extra in (("OPTIONS", {"Access-Control-Request-Method": "POST"}), ("GET", {})):
            status, headers, _ = request(port, method, "/config", host=host, origin="http://evil.example.com",
                                         headers=extra)
            assert status in (403, 421), (host, method, status)
            assert not any(key.startswith("access-control-") for key in headers), (host, method, headers)
    # The page's own requests pass, still without CORS headers (same origin needs none).
    status, headers, _ = request(port, "GET", "/config", origin=f"http://127.0.0.1:{port}")
    assert status == 200 and not any(key.startswith("access-control-") for key in headers)


def _login(port: int, password: str) -> tuple[int, dict[str, str], str]:
    body = f"username=alice&password={password}".encode()
    return request(port, "POST", "/login", body=body, origin=f"http://127.0.0.1:{port}",
                   headers={"Content-Type": "application/x-www-form-urlencoded"})


def test_failed_logins_are_rate_limited(auth_port):
    port = auth_port
    assert _login(port, "correct-horse")[0] == 200  # a right password resets nothing it should not
    for attempt in range(5):
        status, _, text = _login(port, f"guess{attempt}")
        assert status == 400 and "Incorrect" in text, (attempt, status, text)
    status, headers, text = _login(port, "guess5")
    assert status == 429 and int(headers["retry-after"]) > 0 and "too many failed logins" in text
    # Locked out: even the right password waits (a guesser cannot tell a hit from a miss).
    assert _login(port, "correct-horse")[0] == 429


def test_max_upload_not_a_size_is_a_clear_error():
    from typer.testing import CliRunner

    from localqwen.cli.main import app

    result = CliRunner().invoke(app, ["web", "--max-upload", "abc"])
    assert result.exit_code == 2
    assert "--max-upload must be a size such as 50mb" in result.output and "Traceback" not in result.output
    from localqwen.web.server import WebConfigError, parse_size

    assert parse_size("50mb") == 50 * 2**20 and parse_size("1048576") == 2**20 and parse_size("1.5 kb") == 1536
    for bad in ("0", "-5mb", "12 parsecs", ""):
        with pytest.raises(WebConfigError):
            parse_size(bad)
