"""Which requests really come for (and from) this machine: the Host and Origin checks that every
HTTP frontend bound to loopback shares (the API server's guard and the web view's guard).

A web page on another site can make a browser send requests to 127.0.0.1 under its own domain
name after re-pointing its DNS (DNS rebinding); the browser then sends that domain as ``Host``.
A page on another site can also make the browser POST a "simple" request to 127.0.0.1 even though
it cannot read the answer; the browser then names that page in ``Origin``. A server that listens
on loopback only answers neither.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: the HTTP status, a stable code and a sentence for the user."""

    status: int
    code: str
    message: str


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.x.x.x`` or ``::1`` (a name or address that cannot leave this machine)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """``Host`` without its port (``[::1]:8765`` -> ``::1``)."""
    header = header.strip()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def origin_host(origin: str) -> str:
    """The host of an ``Origin`` header (``http://localhost:3000`` -> ``localhost``); "" for ``null`` or junk."""
    try:
        return urlsplit(origin.strip()).hostname or ""
    except ValueError:
        return ""


def same_origin(origin: str, host_header: str) -> bool:
    """Whether the page named in ``Origin`` was served by the host:port the request is addressed to.

    Browsers send ``Origin`` with every state-changing request, also same-origin ones, so a page
    served by this server always passes; ``null`` (sandboxed frames, file pages) never does.
    """
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    default_port = 443 if parts.scheme == "https" else 80
    return parts.hostname.lower() == host_name(host_header).lower() and (port or default_port) == (
        host_port(host_header) or default_port)


def host_port(header: str) -> int | None:
    """The port written in a ``Host`` header (``[::1]:8765`` -> 8765), None when it names none."""
    header = header.strip()
    tail = header.rpartition("]")[2] if header.startswith("[") else (header if header.count(":") == 1 else "")
    digits = tail.rpartition(":")[2] if ":" in tail else ""
    return int(digits) if digits.isdigit() else None


def loopback_refusal(headers: dict[str, str]) -> Refusal | None:
    """For a server bound to loopback: why this request must be refused, or None when it may pass.

    ``headers`` are lower-cased names. A non-loopback ``Host`` is refused with 421 (misdirected),
    a non-loopback ``Origin`` with 403.
    """
    host = host_name(headers.get("host", ""))
    if not is_loopback(host):
        return Refusal(421, "host_not_allowed",
                       f"this server answers only requests addressed to a loopback name (localhost, 127.0.0.1, "
                       f"::1), not {host or 'a missing Host header'!r}")
    origin = headers.get("origin")
    if origin is not None and not is_loopback(origin_host(origin)):
        return Refusal(403, "origin_not_allowed",
                       f"requests from the web page {origin!r} are refused: this server answers pages served from "
                       "a loopback address only")
    return None


__all__ = ["LOOPBACK_NAMES", "Refusal", "host_name", "host_port", "is_loopback", "loopback_refusal", "origin_host",
           "same_origin"]
