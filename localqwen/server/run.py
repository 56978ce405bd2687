"""Running the API with uvicorn: in the foreground for ``localqwen serve``, or in a thread (tests, embedding)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localqwen.app import Workbench
    from localqwen.server.plan import ServePlan


def uvicorn_server(bench: Workbench, plan: ServePlan) -> Any:
    import uvicorn

    from localqwen.server.app import build_app

    config = uvicorn.Config(build_app(bench, plan), host=plan.host, port=plan.port, log_level="warning",
                            access_log=False, server_header=False, timeout_graceful_shutdown=5)
    return uvicorn.Server(config)


def serve(bench: Workbench, plan: ServePlan) -> None:
    """Serve until Ctrl-C (uvicorn handles the signal and finishes open responses)."""
    uvicorn_server(bench, plan).run()


class ServerThread:
    """The server on a background thread; ``start()`` returns once it accepts connections."""

    def __init__(self, bench: Workbench, plan: ServePlan) -> None:
        self.server = uvicorn_server(bench, plan)
        self.thread = threading.Thread(target=self.server.run, name="localqwen-serve", daemon=True)

    def start(self, timeout: float = 30.0) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start (is the port free?)")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
