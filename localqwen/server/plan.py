"""What ``localqwen serve`` may do: the address, the API key and the limits, checked before binding.

The rules: loopback by default and no key needed there; ``--listen`` (all interfaces) or any
non-loopback ``--host`` is refused without an API key (a model server open to the network lets
anyone run code-generating models on this machine); the key comes from ``--api-key`` or a file
(so it need not sit in the shell history).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localqwen.vocabulary.loopback import LOOPBACK_NAMES, is_loopback

DEFAULT_MAX_BODY = 25 * 2**20  # an image or two as data URLs fit; a runaway upload does not
DEFAULT_MAX_WAITING = 4


class ServeConfigError(ValueError):
    """The requested way of serving is not allowed or not possible; the message says why."""


@dataclass(frozen=True)
class ServePlan:
    host: str
    port: int
    api_key: str = ""
    max_body: int = DEFAULT_MAX_BODY
    max_waiting: int = DEFAULT_MAX_WAITING  # requests waiting per engine behind the one generating

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/v1"


def plan_serve(*, host: str = "127.0.0.1", port: int = 8765, listen: bool = False, api_key: str = "",
               api_key_file: str | Path | None = None, max_body: int = DEFAULT_MAX_BODY,
               max_waiting: int = DEFAULT_MAX_WAITING) -> ServePlan:
    """Check the options and return the plan; raises :class:`ServeConfigError` naming the problem."""
    if api_key and api_key_file:
        raise ServeConfigError("give the API key once: --api-key or --api-key-file, not both")
    if api_key_file:
        path = Path(api_key_file).expanduser()
        try:
            api_key = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ServeConfigError(f"cannot read the API key file {path}: {exc.strerror or exc}") from None
        if not api_key:
            raise ServeConfigError(f"the API key file {path} is empty")
    if api_key and (len(api_key) < 8 or any(c.isspace() for c in api_key)):
        raise ServeConfigError("the API key must be at least 8 characters with no spaces")
    if listen:
        host = "0.0.0.0"
    if not is_loopback(host) and not api_key:
        raise ServeConfigError(
            f"serving on {host} opens the models to the network; give --api-key KEY or --api-key-file FILE "
            "(clients then send 'Authorization: Bearer KEY')")
    if not 0 < port < 65536:
        raise ServeConfigError(f"port must be between 1 and 65535, got {port}")
    if max_body < 1024:
        raise ServeConfigError(f"the body size limit must be at least 1 KB, got {max_body} bytes")
    if max_waiting < 0:
        raise ServeConfigError(f"the queue length must be 0 or more, got {max_waiting}")
    return ServePlan(host=host, port=port, api_key=api_key, max_body=max_body, max_waiting=max_waiting)


__all__ = ["LOOPBACK_NAMES", "ServeConfigError", "ServePlan", "is_loopback", "plan_serve"]
