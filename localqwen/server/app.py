"""The routes: ``/health``, ``/v1/models``, ``/v1/chat/completions``, ``/v1/embeddings``,
``/v1/rerank``, and the MCP endpoint ``/mcp`` (Streamable HTTP, when the ``mcp`` SDK is installed).

Built on Starlette (the ASGI toolkit under FastAPI) and wrapped in :class:`Guard`. Every failure
leaves as an OpenAI-shaped error: refusals with their status (400, 401, 404, 413, 421, 429),
a model that cannot load as 503, anything unexpected as 500. No CORS middleware is installed,
so browsers on other origins cannot read answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from localqwen.server import shapes
from localqwen.server.catalog import find_model, served_models
from localqwen.server.errors import ApiError, error_body, error_response
from localqwen.server.guard import Guard, read_json
from localqwen.server.plan import ServePlan
from localqwen.server.queues import Queues, Ticket

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from localqwen.app import Workbench

DISCONNECT_POLL_S = 0.25


def build_app(bench: Workbench, plan: ServePlan) -> Any:
    """The ASGI app serving ``bench`` under ``plan``'s rules."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    from localqwen.server.mcp_server import HttpMcp, mcp_available

    api = Api(bench, plan)
    routes = [
        Route("/health", api.health, methods=["GET"]),
        Route("/v1/models", api.models, methods=["GET"]),
        Route("/v1/chat/completions", api.chat_completions, methods=["POST"]),
        Route("/v1/embeddings", api.embeddings, methods=["POST"]),
        Route("/v1/rerank", api.rerank, methods=["POST"]),
    ]
    mcp = HttpMcp(bench, plan, api.queues) if mcp_available() else None
    if mcp is not None:
        routes.append(Route("/mcp", mcp.endpoint))  # an ASGI app: GET (event stream), POST, DELETE
    api.mcp = mcp is not None
    app = Starlette(routes=routes, exception_handlers={404: _not_found, 405: _not_allowed},
                    lifespan=mcp.lifespan if mcp is not None else None)
    app.state.api = api
    return Guard(app, plan)


def openai_errors(handler: Callable[[Any, Request], Awaitable[Response]]) -> Callable[[Any, Request], Awaitable[Response]]:
    """Turn what a route raises into OpenAI's error shape with the right status."""

    @functools.wraps(handler)
    async def wrapped(self: Any, request: Request) -> Response:
        try:
            return await handler(self, request)
        except Exception as exc:  # noqa: BLE001 - every failure must reach the client in one shape
            return error_response(as_api_error(exc))

    return wrapped


def as_api_error(exc: BaseException) -> ApiError:
    from localqwen.runtime.engine import EngineError, UnsupportedSetting

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, UnsupportedSetting):  # the request asked what this model cannot do
        return ApiError(400, str(exc), param="response_format", code="unsupported_setting")
    if isinstance(exc, EngineError):
        return ApiError(503, str(exc), code="model_unavailable")
    if isinstance(exc, KeyError):
        return ApiError(404, str(exc.args[0]) if exc.args else "not found")
    if isinstance(exc, ValueError):
        return ApiError(400, str(exc))
    return ApiError(500, f"{type(exc).__name__}: {exc}", code="internal_error")


class Api:
    def __init__(self, bench: Workbench, plan: ServePlan) -> None:
        self.bench = bench
        self.plan = plan
        self.queues = Queues(plan.max_waiting)
        self.started = int(time.time())
        self._listing = threading.Lock()
        self.mcp = False  # set by build_app when /mcp is mounted

    async def _served(self) -> list[Any]:
        import anyio

        return await anyio.to_thread.run_sync(self._served_now)

    def _served_now(self) -> list[Any]:
        # The first listing loads the plugins: one thread at a time, so two first requests don't both load them.
        with self._listing:
            return served_models(self.bench)

    def allowed_folders(self) -> list[Any]:
        """Folders whose images a request may name by path: what the app wrote or was given."""
        paths = self.bench.paths
        return [paths.uploads_dir, paths.outputs_dir]

    # -- routes ---------------------------------------------------------------------------------
    @openai_errors
    async def health(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        from localqwen import __version__

        return JSONResponse({
            "status": "ok", "version": __version__,
            "models": [model.id for model in await self._served()],
            "capabilities": {
                "chat_completions": True, "streaming": True, "tools": True, "embeddings": True,
                "images": "data URLs, or local paths inside the uploads and outputs folders (never fetched)",
                "plugin_models": "localqwen/<plugin id>", "extension_field": shapes.EXTENSION_FIELD,
                "rerank": True, "mcp": "/mcp (Streamable HTTP)" if self.mcp else False,
            },
            "limits": {"max_body_bytes": self.plan.max_body, "max_waiting_per_engine": self.plan.max_waiting},
            "auth": bool(self.plan.api_key),
            "queues": self.queues.state(),
        })

    @openai_errors
    async def models(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        return JSONResponse({"object": "list", "data": [m.listing(self.started) for m in await self._served()]})

    @openai_errors
    async def chat_completions(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        body = await read_json(request, self.plan.max_body)
        served = find_model(await self._served(), body.get("model"), "chat")
        turn = self._turn(served, body)
        ticket = self.queues.ticket(served.queue)  # 429 here, before anything starts
        if body.get("stream"):
            return TicketedStream(_sse(turn, ticket), ticket)
        try:
            async with ticket.turn():
                result = await until_disconnected(request, turn.complete())
        finally:
            ticket.release()
        return JSONResponse(result)

    @openai_errors
    async def embeddings(self, request: Request) -> Response:
        import anyio
        from starlette.responses import JSONResponse

        from localqwen.server.embeddings import embed, embedding_inputs

        body = await read_json(request, self.plan.max_body)
        served = find_model(await self._served(), body.get("model"), "embedding")
        texts = embedding_inputs(body)
        ticket = self.queues.ticket(served.queue)
        try:
            async with ticket.turn():
                result = await anyio.to_thread.run_sync(embed, self.bench, served.target, texts,
                                                        body.get("encoding_format", "float"))
        finally:
            ticket.release()
        return JSONResponse(result)

    @openai_errors
    async def rerank(self, request: Request) -> Response:
        import anyio
        from starlette.responses import JSONResponse

        from localqwen.server.rerank import rerank, rerank_request, served_rerankers

        body = await read_json(request, self.plan.max_body)
        model, query, texts, top_n, return_documents = rerank_request(body, served_rerankers(self.bench))
        ticket = self.queues.ticket(f"reranker:{model}")
        try:
            async with ticket.turn():
                result = await anyio.to_thread.run_sync(rerank, self.bench, model, query, texts, top_n,
                                                        return_documents)
        finally:
            ticket.release()
        return JSONResponse(result)

    # -- helpers --------------------------------------------------------------------------------
    def _turn(self, served: Any, body: dict[str, Any]) -> Any:
        from localqwen.plugin_api.chat import MAX_IMAGE_BYTES
        from localqwen.server.wire import check_tools, engine_messages, settings_from

        messages = engine_messages(body.get("messages"), self.allowed_folders())
        if served.kind == "model":
            from localqwen.server.model_chat import ModelTurn

            tools = check_tools(body.get("tools"))
            choice = body.get("tool_choice")
            if choice == "none":
                tools = None
            elif choice not in (None, "auto"):
                raise ApiError(400, "only tool_choice 'auto' or 'none' is supported: the model decides",
                               param="tool_choice")
            default_max = int(self.bench.config.plugin_section("chat").get("max_new_tokens", 1024))
            return ModelTurn(self.bench, served.id, served.target, messages, tools, settings_from(body, default_max))
        from localqwen.server.plugin_chat import PluginTurn, plugin_messages
        from localqwen.server.wire import response_schema

        if response_schema(body) is not None:
            raise ApiError(400, f"{served.id} answers in its own form; 'response_format' applies to the default "
                                "model only", param="response_format")

        if body.get("tools"):
            raise ApiError(400, f"{served.id} is a plugin chat with its own tools; send 'tools' to the model "
                                f"{self._served_now()[0].id} instead", param="tools")
        uploads = self.bench.paths.uploads_dir / "api"
        return PluginTurn(self.bench, served.id, served.target, plugin_messages(messages, uploads, MAX_IMAGE_BYTES))


async def _sse(turn: Any, ticket: Ticket) -> AsyncIterator[bytes]:
    try:
        async with ticket.turn(), contextlib.aclosing(turn.stream()) as chunks:
            async for chunk in chunks:
                yield shapes.sse(chunk)
    except Exception as exc:  # noqa: BLE001 - after the 200 header, an error travels as an event
        error = as_api_error(exc)
        yield shapes.sse(error_body(error.status, error.message, code=error.code, param=error.param))
        return
    yield shapes.sse("[DONE]")


def _ticketed_stream_class() -> type:
    from starlette.responses import StreamingResponse

    class _TicketedStream(StreamingResponse):
        """An SSE response that gives its queue ticket back however the response ends."""

        def __init__(self, content: AsyncIterator[bytes], ticket: Ticket) -> None:
            super().__init__(content, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
            self.ticket = ticket

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            import anyio

            try:
                await super().__call__(scope, receive, send)
            finally:
                # A client that left cancels the response between two chunks: close the body now
                # (its generation is cancelled and awaited) rather than at garbage collection.
                with anyio.CancelScope(shield=True):
                    await self.body_iterator.aclose()  # type: ignore[attr-defined]
                self.ticket.release()

    return _TicketedStream


def TicketedStream(content: AsyncIterator[bytes], ticket: Ticket) -> Any:  # noqa: N802 - reads as a class
    return _ticketed_stream_class()(content, ticket)


async def until_disconnected(request: Request, work: Awaitable[Any]) -> Any:
    """Await ``work``, cancelling it (and so its generation) if the client disconnects first."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise ApiError(499, "the client closed the connection", code="client_closed")


async def _not_found(request: Request, exc: Exception) -> Response:
    return error_response(ApiError(404, f"no route {request.url.path}; see /v1/models, /v1/chat/completions, "
                                        "/v1/embeddings, /v1/rerank, /mcp, /health", code="not_found"))


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return error_response(ApiError(405, f"{request.method} is not allowed on {request.url.path}"))
