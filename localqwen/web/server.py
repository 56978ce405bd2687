"""Starting the web view: which address and port, who may connect, which files may be served.

Rules: bind 127.0.0.1 unless told otherwise; if the port is taken, use the next free one; no
share link unless asked; listening beyond loopback (``--listen``, another ``--host`` or
``--share``) requires ``--auth user:pass``. The process works from an app-owned folder and
Gradio's temp dir is the app's cache, so nothing in the user's home can be served; only the
outputs and uploads folders are allowed. Every request first passes :mod:`localqwen.web.guard`
(Host and Origin checks against DNS rebinding and cross-site requests, no CORS, a limit on failed
logins).
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localqwen.app import Workbench
from localqwen.vocabulary.loopback import is_loopback

if TYPE_CHECKING:
    from localqwen.web.app import WebApp

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 7860
PORT_SEARCH = 100
DEFAULT_MAX_UPLOAD = "50mb"


class WebConfigError(ValueError):
    """The requested way of serving is not allowed or not possible; the message says why."""


@dataclass
class LaunchPlan:
    host: str
    port: int
    share: bool
    auth: tuple[str, str] | None
    max_upload: int  # bytes

    @property
    def loopback_only(self) -> bool:
        """Bound to loopback with no share link: only requests addressed to this machine are answered."""
        return is_loopback(self.host) and not self.share

    @property
    def url(self) -> str:
        shown = LOOPBACK if self.host in ("0.0.0.0", "::") else self.host
        if ":" in shown:
            shown = f"[{shown}]"
        return f"http://{shown}:{self.port}/"


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 2**10, "mb": 2**20, "gb": 2**30}


def parse_size(text: str) -> int:
    """``50mb`` / ``500kb`` / ``1gb`` / ``1048576`` -> bytes; :class:`WebConfigError` for anything else."""
    match = _SIZE.match(str(text))
    size = int(float(match.group(1)) * _UNITS[(match.group(2) or "b").lower()]) if match else 0
    if size < 1:
        raise WebConfigError(f"--max-upload must be a size such as 50mb, 500kb or 1gb (more than 0), not {text!r}")
    return size


def parse_auth(text: str | None) -> tuple[str, str] | None:
    if not text:
        return None
    user, sep, password = text.partition(":")
    if not sep or not user or not password:
        raise WebConfigError("--auth must look like USER:PASSWORD (both parts non-empty)")
    return user, password


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def choose_port(host: str, wanted: int) -> int:
    """``wanted`` if free, else the next free port above it."""
    for port in range(wanted, min(wanted + PORT_SEARCH, 65536)):
        if port_is_free(host, port):
            return port
    raise WebConfigError(f"no free port between {wanted} and {wanted + PORT_SEARCH - 1} on {host}")


def plan_launch(*, host: str = LOOPBACK, port: int = DEFAULT_PORT, listen: bool = False, share: bool = False,
                auth: str | None = None, max_upload: str = DEFAULT_MAX_UPLOAD) -> LaunchPlan:
    """Apply the rules above; raises :class:`WebConfigError` with the reason when refused."""
    credentials = parse_auth(auth)
    if listen and host == LOOPBACK:
        host = "0.0.0.0"
    exposed = share or not is_loopback(host)
    if exposed and credentials is None:
        what = "--share" if share else f"listening on {host}"
        raise WebConfigError(f"{what} makes LocalQwen reachable from other machines; add --auth USER:PASSWORD")
    if not 1 <= port <= 65535:
        raise WebConfigError(f"port must be between 1 and 65535, not {port}")
    upload_bytes = parse_size(max_upload)
    return LaunchPlan(host=host, port=choose_port(host, port), share=share, auth=credentials, max_upload=upload_bytes)


def launch(plan: LaunchPlan, bench: Workbench | None = None, *, block: bool = True) -> tuple[WebApp, Any]:
    """Build and start the web view; returns the app and Gradio's launch result."""
    bench = bench or Workbench.create()
    from localqwen.web.app import WEB_CSS, build_web_app, gradio_translations
    from localqwen.web.files import allowed_paths, gradio_temp_dir, prepare_environment
    from localqwen.web.guard import GuardRules, LoginLimiter, guarded_gradio_app

    prepare_environment(bench.paths)
    # Gradio may serve files from its working directory: make that an app-owned, empty folder.
    workdir = bench.paths.data_dir / "web"
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    web = build_web_app(bench)
    web.blocks.queue(default_concurrency_limit=4)
    rules = GuardRules(loopback_only=plan.loopback_only, same_origin_only=not plan.share,
                       login_limiter=LoginLimiter() if plan.auth else None)
    result = web.blocks.launch(
        server_name=plan.host,
        server_port=plan.port,
        share=plan.share,
        auth=plan.auth,
        allowed_paths=[str(p) for p in allowed_paths(bench.paths)],
        blocked_paths=[str(bench.paths.config_dir), str(bench.paths.database_file)],
        max_file_size=plan.max_upload,
        css=WEB_CSS,
        i18n=gradio_translations(),
        prevent_thread_lock=True,
        quiet=True,
        show_error=True,
        inbrowser=False,
        ssr_mode=False,
        mcp_server=False,  # off: one MCP surface (`localqwen mcp`, serve's /mcp) under the API's key/Host/Origin rules
        footer_links=["settings"],
        _app=guarded_gradio_app(rules),  # the guard must run before Gradio's own CORS layer (see web.guard)
    )
    assert gradio_temp_dir(bench.paths).exists()
    if block:
        web.blocks.block_thread()
    return web, result
