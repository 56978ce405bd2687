"""LocalQwen as an MCP server: the plugin actions as tools, the files they write as resources.

Built on the MCP SDK's low-level ``Server`` (pinned to 2.x in the ``serve`` extra): LocalQwen
already has every tool's JSON schema (the action's Form) and its own event stream, so the
low-level handlers map them one to one, where ``MCPServer``'s decorators would want a Python
function signature per tool. The same server object runs over stdio (``localqwen mcp``) and over
Streamable HTTP at ``/mcp`` on ``localqwen serve``'s port (see :func:`http_endpoint`), where the
API's own rules (loopback, key, Host, Origin, body size) guard it.

A tool call runs its action in a worker thread (:func:`iterate_in_thread`); a client that cancels
the request, or an HTTP client that goes away, cancels the action's ``CancelToken``. It first
takes a ticket in its engine's queue (:mod:`localqwen.server.queues`), the same queues the API's
chat completions wait in when served at ``/mcp``: when the line is full, the call returns an error
result saying when to try again instead of running a second generation on a busy engine.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from localqwen.server.mcp_files import OutputFiles, ResourceError
from localqwen.server.mcp_results import ProgressForwarder, ToolOutcome
from localqwen.server.mcp_tools import McpTool, tool_catalog
from localqwen.server.queues import Queues
from localqwen.server.threads import iterate_in_thread
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import CancelToken

if TYPE_CHECKING:
    from localqwen.app import Workbench
    from localqwen.server.plan import ServePlan

INSTRUCTIONS = ("LocalQwen's plugins as tools: each tool is one plugin action and takes that action's form "
                "as arguments. Files the tools write are resources (file:// URIs) you can read. "
                "knowledge_base_search finds passages in the user's documents.")


class McpBackend:
    """What the handlers need: the workbench, the tool catalog (loaded once) and the readable files."""

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench
        self.files = OutputFiles(bench.paths.outputs_dir)
        self._tools: dict[str, McpTool] | None = None
        self._loading = threading.Lock()

    def tools(self) -> dict[str, McpTool]:
        # Loading the plugins happens once, one thread at a time (two first requests may race).
        with self._loading:
            if self._tools is None:
                self._tools = tool_catalog(self.bench)
            return self._tools


def build_mcp_server(bench: Workbench, queues: Queues | None = None) -> Any:
    """The low-level MCP ``Server`` over ``bench``'s plugins; ``queues`` shared with the API when given."""
    import anyio
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    from localqwen import __version__
    from localqwen.plugin_api.forms import FormError
    from localqwen.server.errors import ApiError
    from localqwen.server.plan import DEFAULT_MAX_WAITING

    backend = McpBackend(bench)
    if queues is None:
        queues = Queues(DEFAULT_MAX_WAITING)

    async def tools() -> dict[str, McpTool]:
        return await anyio.to_thread.run_sync(backend.tools)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=tool.name, title=tool.title, description=tool.description,
                       input_schema=tool.input_schema())
            for tool in (await tools()).values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        catalog = await tools()
        tool = catalog.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"no tool named {params.name!r}; tools: {', '.join(catalog)}")
        cancel = CancelToken()
        try:
            stream = tool.events(bench, dict(params.arguments or {}), cancel)
        except FormError as exc:  # bad arguments: a result the calling model can read and fix
            return types.CallToolResult(is_error=True, structured_content={"errors": exc.errors}, content=[
                types.TextContent(text=f"invalid arguments for {tool.name}: {exc}")])
        try:
            ticket = queues.ticket(await anyio.to_thread.run_sync(tool.queue, bench))
        except ApiError as exc:  # the engine's line is full: the client may retry later
            getattr(stream, "close", lambda: None)()  # not started: nothing ran
            return types.CallToolResult(is_error=True, content=[types.TextContent(text=str(exc))])
        outcome = ToolOutcome(backend.files)
        progress = ProgressForwarder()
        try:
            async with ticket.turn(), contextlib.aclosing(iterate_in_thread(lambda: stream, cancel)) as events:
                async for event in events:
                    if isinstance(event, ev.Progress):
                        update = progress.forward(event)
                        if update is not None:
                            await ctx.session.report_progress(*update)
                    else:
                        outcome.add(event)
        finally:
            ticket.release()
        return outcome.result()

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        entries = await anyio.to_thread.run_sync(backend.files.listing)
        return types.ListResourcesResult(resources=[types.Resource(**entry) for entry in entries])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        try:
            contents = await anyio.to_thread.run_sync(backend.files.read, str(params.uri))
        except ResourceError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        kind = types.TextResourceContents if "text" in contents else types.BlobResourceContents
        return types.ReadResourceResult(contents=[kind(**contents)])

    return Server("localqwen", version=__version__, title="LocalQwen", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)


async def run_stdio(bench: Workbench) -> None:
    """Serve MCP over this process's stdin and stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server

    server = build_mcp_server(bench)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class HttpMcp:
    """``/mcp`` on the API server: the Streamable HTTP endpoint and the lifespan that runs its sessions."""

    def __init__(self, bench: Workbench, plan: ServePlan, queues: Queues) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        # The API's Guard already checks Host, Origin, the key and the declared body size for every
        # route, /mcp included: one set of rules, so the SDK's own Host/Origin check is off.
        self.manager = StreamableHTTPSessionManager(
            app=build_mcp_server(bench, queues), max_request_body_size=plan.max_body,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.endpoint = StreamableHTTPASGIApp(self.manager)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> Any:
        async with self.manager.run():
            yield


def mcp_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("mcp") is not None and importlib.util.find_spec("mcp_types") is not None
