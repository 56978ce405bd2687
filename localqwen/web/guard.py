"""The checks every request to the web view passes before Gradio sees it.

- DNS rebinding: on a loopback server a request addressed to any other name (``Host:
  evil.example.com``, what a browser sends after a rebinding attack re-pointed that name to
  127.0.0.1) is refused with 421, and an ``Origin`` that is not a loopback page with 403. These are
  the API server's checks (:mod:`localqwen.vocabulary.loopback`), not a copy.
- Cross-site requests: the web view's own page is the only page that may talk to it, so a request
  that names another page in ``Origin`` (browsers send it with every POST) is refused with 403,
  also when listening on the network with ``--auth`` (Gradio's login cookie is ``SameSite=None``).
  Not with ``--share``: the share tunnel rewrites the address the request came to.
- No CORS: Gradio echoes a foreign ``Origin`` in ``Access-Control-Allow-Origin`` whenever the
  ``Host`` is not a loopback name; this guard drops every ``Access-Control-*`` response header, so
  no page on another origin can read an answer (the web view's own page never needs them).
- Password guessing (with ``--auth``): after ``max_failures`` wrong logins from one address within
  ``window_s`` seconds, that address gets 429 with ``Retry-After`` until the oldest failure ages out.

The guard is the outermost ASGI layer (see :func:`guarded_gradio_app`), so it runs before Gradio's
own CORS middleware and a refused request never reaches a route.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localqwen.vocabulary.loopback import Refusal, loopback_refusal, same_origin

LOGIN_PATHS = ("/login", "/login/")
DEFAULT_MAX_FAILURES = 5
DEFAULT_WINDOW_S = 60.0
_TRACKED_CLIENTS = 4096  # past this many addresses, the ones with no recent failure are forgotten


class LoginLimiter:
    """Counts failed logins per client address in a sliding window."""

    def __init__(self, max_failures: int = DEFAULT_MAX_FAILURES, window_s: float = DEFAULT_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_failures < 1 or window_s <= 0:
            raise ValueError("the login limit needs at least 1 failure and a window longer than 0 s")
        self.max_failures = max_failures
        self.window_s = window_s
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}

    def retry_after(self, client: str) -> float:
        """Seconds until ``client`` may try again; 0 when it may try now."""
        recent = self._recent(client)
        if len(recent) < self.max_failures:
            return 0.0
        return max(0.0, recent[0] + self.window_s - self.clock())

    def record(self, client: str, *, succeeded: bool) -> None:
        if succeeded:
            self._failures.pop(client, None)
            return
        if len(self._failures) >= _TRACKED_CLIENTS:
            for other in [c for c in self._failures if not self._recent(c)]:
                del self._failures[other]
        self._failures.setdefault(client, deque()).append(self.clock())

    def _recent(self, client: str) -> deque[float]:
        times = self._failures.get(client, deque())
        cutoff = self.clock() - self.window_s
        while times and times[0] <= cutoff:
            times.popleft()
        return times


@dataclass(frozen=True)
class GuardRules:
    loopback_only: bool  # refuse non-loopback Host / Origin (a server bound to loopback, no share link)
    same_origin_only: bool  # refuse requests whose Origin is another page
    login_limiter: LoginLimiter | None = None  # only with --auth


def refusal_for(rules: GuardRules, headers: dict[str, str]) -> Refusal | None:
    """Why a request with these (lower-cased) headers must be refused; None when it may pass."""
    if rules.loopback_only:
        refusal = loopback_refusal(headers)
        if refusal is not None:
            return refusal
    origin = headers.get("origin")
    if rules.same_origin_only and origin is not None and not same_origin(origin, headers.get("host", "")):
        return Refusal(403, "origin_not_allowed",
                       f"requests from the web page {origin!r} are refused: the web view answers only its own page")
    return None


class WebGuard:
    """Pure ASGI middleware applying :class:`GuardRules` and removing CORS headers from every answer."""

    def __init__(self, app: Any, rules: GuardRules) -> None:
        self.app = app
        self.rules = rules

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        refusal = refusal_for(self.rules, headers)
        if refusal is not None:
            await _refuse(scope, send, refusal)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        send = _without_cors(send)
        limiter = self.rules.login_limiter
        if limiter is None or scope.get("method") != "POST" or scope.get("path") not in LOGIN_PATHS:
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("unknown", 0))[0]
        wait = limiter.retry_after(client)
        if wait > 0:
            await _refuse(scope, send, Refusal(429, "too_many_logins",
                                               f"too many failed logins from {client}; try again in "
                                               f"{math.ceil(wait)} s"), retry_after=wait)
            return
        await self.app(scope, receive, _watch_login(send, limiter, client))


def _without_cors(send: Any) -> Any:
    async def send_without_cors(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [(k, v) for k, v in message.get("headers", [])
                                  if not k.lower().startswith(b"access-control-")]
        await send(message)
    return send_without_cors


def _watch_login(send: Any, limiter: LoginLimiter, client: str) -> Any:
    # Gradio answers a wrong USER:PASSWORD with 400 and a right one with 200.
    async def send_watching(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status = message["status"]
            if status == 200 or status == 400:
                limiter.record(client, succeeded=status == 200)
        await send(message)
    return send_watching


async def _refuse(scope: dict[str, Any], send: Any, refusal: Refusal, *, retry_after: float | None = None) -> None:
    if scope["type"] == "websocket":  # closing before accepting answers the handshake with 403
        await send({"type": "websocket.close", "code": 1008, "reason": refusal.message[:120]})
        return
    body = json.dumps({"error": {"code": refusal.code, "message": refusal.message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(math.ceil(retry_after)).encode()))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def guarded_gradio_app(rules: GuardRules) -> Any:
    """A Gradio ``App`` whose middleware stack is wrapped in :class:`WebGuard` (handed to
    ``Blocks.launch(_app=...)``): Gradio adds its CORS middleware outermost with ``add_middleware``,
    so wrapping the built stack is the one way to run before it."""
    from gradio.routes import App, ORJSONResponse

    class GuardedApp(App):
        def build_middleware_stack(self) -> Any:
            return WebGuard(super().build_middleware_stack(), rules)

    return GuardedApp(default_response_class=ORJSONResponse)


__all__ = ["GuardRules", "LoginLimiter", "WebGuard", "guarded_gradio_app", "refusal_for"]
