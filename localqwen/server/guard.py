"""The checks every request passes before a route sees it: the Host header, the API key, the body size.

- A loopback server answers only requests addressed to a loopback name (421 otherwise: DNS
  rebinding) and refuses a request whose ``Origin`` is not a loopback page (403: a page on any
  site could otherwise make the browser POST a "simple" ``text/plain`` request to 127.0.0.1, say
  an MCP tool call). Both checks live in :mod:`localqwen.vocabulary.loopback`, shared with the
  web view's guard.
- With an API key, every route needs ``Authorization: Bearer KEY`` (compared in constant time).
- A body over the limit is refused from its ``Content-Length`` before it is read, and
  :func:`read_json` counts what a chunked upload really sends.
- No CORS headers are ever sent, so a browser page on another origin cannot read any answer.
"""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Any

from localqwen.server.errors import ApiError, error_body
from localqwen.server.plan import ServePlan
from localqwen.vocabulary.loopback import host_name, loopback_refusal, origin_host

if TYPE_CHECKING:
    from starlette.requests import Request


def check_request(plan: ServePlan, headers: dict[str, str]) -> None:
    """Raise :class:`ApiError` when the request may not reach the routes (Host, key, declared size)."""
    refusal = loopback_refusal(headers) if plan.loopback else None
    if refusal is not None:
        raise ApiError(refusal.status, refusal.message, code=refusal.code)
    if plan.api_key:
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), plan.api_key.encode()):
            raise ApiError(401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                           code="invalid_api_key")
    length = headers.get("content-length", "")
    if length.isdigit() and int(length) > plan.max_body:
        raise ApiError(413, f"the request body is {int(length)} bytes; this server accepts at most {plan.max_body}",
                       code="body_too_large")


class Guard:
    """Pure ASGI middleware running :func:`check_request` (so a refused request is never routed)."""

    def __init__(self, app: Any, plan: ServePlan) -> None:
        self.app = app
        self.plan = plan

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            check_request(self.plan, headers)
        except ApiError as error:
            body = json.dumps(error.body()).encode()
            extra = [(b"www-authenticate", b"Bearer")] if error.status == 401 else []
            await send({"type": "http.response.start", "status": error.status,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()), *extra]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object, read up to ``limit`` bytes; :class:`ApiError` when too big or not JSON."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, f"the request body is over this server's limit of {limit} bytes",
                           code="body_too_large")
    try:
        value = json.loads(body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ApiError(400, "the body must be a JSON object")
    return value


__all__ = ["Guard", "check_request", "error_body", "host_name", "origin_host", "read_json"]
