"""The MCP server with the SDK's own client: in memory, over a ``localqwen mcp`` subprocess, and at
``/mcp`` on a real loopback API server. The tools are the test plugin's actions (echo: progress,
a table, a written file; slow: cancellable; fail: raises) plus knowledge-base search."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def plugins_env(test_plugins, monkeypatch):
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "testplug,rag")
    return test_plugins


def in_memory_client(bench):
    from mcp import Client

    from localqwen.server.mcp_server import build_mcp_server

    return Client(build_mcp_server(bench), raise_exceptions=False)


def echo_checks(result, progress) -> None:
    """What one echo call (text 'hi', repeat 3) must give, whatever the transport."""
    assert progress == [(1.0, 3.0, "echoing"), (2.0, 3.0, "echoing"), (3.0, 3.0, "echoing")]
    assert not result.is_error
    assert result.content[0].type == "text" and result.content[0].text == "hi\nhi\nhi"
    assert any(c.type == "text" and c.text.startswith("**lines**\n| n | line |") for c in result.content)
    links = [c for c in result.content if c.type == "resource_link"]
    assert [link.name for link in links] == ["echo.txt"] and links[0].uri.startswith("file:///")
    assert result.structured_content["status"] == "ok"
    assert result.structured_content["result"] == {"lines": ["hi", "hi", "hi"]}


def test_actions_are_tools_with_their_form_schema(plugins_env):
    from localqwen_rag.plugin import SearchForm
    from lq_test_plugin import EchoForm

    from localqwen.app import Workbench

    async def main():
        async with in_memory_client(Workbench.create()) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in anyio.run(main)}
    assert {"testplug_echo", "testplug_slow", "testplug_fail", "rag_search", "rag_add_documents",
            "knowledge_base_search"} <= set(tools)
    assert tools["testplug_echo"].input_schema == EchoForm.model_json_schema()
    assert tools["rag_search"].input_schema == SearchForm.model_json_schema()
    assert tools["testplug_echo"].description == "Echo text with progress."
    assert tools["testplug_echo"].title == "Test plugin › Echo"


def test_a_call_streams_progress_and_its_file_is_a_resource(plugins_env, isolated_home):
    from localqwen.app import Workbench

    async def main():
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        async with in_memory_client(Workbench.create()) as client:
            result = await client.call_tool("testplug_echo", {"text": "hi", "repeat": 3}, progress_callback=on_progress)
            link = next(c for c in result.content if c.type == "resource_link")
            listed = (await client.list_resources()).resources
            read = await client.read_resource(link.uri)
            return result, progress, link, listed, read

    result, progress, link, listed, read = anyio.run(main)
    echo_checks(result, progress)
    assert link.uri in [resource.uri for resource in listed]
    assert read.contents[0].text == "hi\nhi\nhi" and read.contents[0].mime_type == "text/plain"


def test_bad_arguments_failures_and_refusals(plugins_env, isolated_home):
    from mcp.shared.exceptions import MCPError

    from localqwen.app import Workbench

    secret = isolated_home / "config" / "config.toml"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("[app]\n", encoding="utf-8")

    async def main():
        async with in_memory_client(Workbench.create()) as client:
            bad = await client.call_tool("testplug_echo", {"repeat": 9})
            failed = await client.call_tool("testplug_fail", {"message": "kaboom"})
            errors = []
            for call in (lambda: client.call_tool("no_such_tool", {}),
                         lambda: client.read_resource(secret.resolve().as_uri()),
                         lambda: client.read_resource("https://example.com/x")):
                with pytest.raises(MCPError) as caught:
                    await call()
                errors.append(str(caught.value))
            return bad, failed, errors

    bad, failed, errors = anyio.run(main)
    # Bad arguments come back as a tool error the calling model can read, field by field.
    assert bad.is_error and bad.structured_content["errors"] == {
        "text": "Field required", "repeat": "Input should be less than or equal to 5"}
    assert failed.is_error and failed.structured_content["status"] == "failed"
    assert [c.text for c in failed.content] == ["about to fail", "error: kaboom", "failed: RuntimeError: kaboom"]
    assert "no tool named 'no_such_tool'" in errors[0] and "testplug_echo" in errors[0]
    assert "was not written by a tool call" in errors[1]
    assert "only file:// resources" in errors[2]


def test_a_cancelled_call_cancels_the_action(plugins_env, isolated_home):
    from localqwen.app import Workbench

    bench = Workbench.create()
    marker = bench.paths.outputs_dir / "testplug" / "slow.state"

    async def main():
        async with in_memory_client(bench) as client:
            with anyio.move_on_after(1.0):
                await client.call_tool("testplug_slow", {"steps": 400, "delay": 0.05})
            # The action's own cleanup ran: it saw the cancel token, not the end of its loop.
            with anyio.fail_after(10):
                while not marker.exists() or not marker.read_text().endswith(("cancelled", "finished")):
                    await anyio.sleep(0.05)

    anyio.run(main)
    state = marker.read_text()
    assert state.endswith(" cancelled") and int(state.split()[0]) < 400


def test_knowledge_base_search_tool(plugins_env, isolated_home, tmp_path):
    from localqwen.app import Workbench

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "calcium.md").write_text("# Bones\nVitamin D helps the body absorb calcium from food.\n", encoding="utf-8")
    (docs / "trains.md").write_text("# Rail\nThe night train to Vienna leaves at ten.\n", encoding="utf-8")
    bench = Workbench.create()
    bench.services.retrieval.create("notes").ingest([docs])

    async def main():
        async with in_memory_client(bench) as client:
            found = await client.call_tool("knowledge_base_search",
                                           {"query": "what helps absorb calcium", "knowledge_base": "notes", "k": 1})
            missing = await client.call_tool("knowledge_base_search", {"query": "x", "knowledge_base": "nope"})
            return found, missing

    found, missing = anyio.run(main)
    assert not found.is_error
    hit, = found.structured_content["result"]["hits"]
    assert hit["source"].endswith("calcium.md") and "absorb calcium" in hit["text"]
    assert "absorb calcium" in found.content[0].text and "calcium.md" in found.content[0].text
    assert missing.is_error and "no knowledge base named 'nope' (known: notes)" in missing.content[0].text


def test_localqwen_mcp_over_stdio(plugins_env, isolated_home):
    from mcp import Client, StdioServerParameters

    names = ("LOCALQWEN_HOME", "LOCALQWEN_PLUGINS", "LOCALQWEN_NO_THIRD_PARTY_PLUGINS", "PYTHONPATH",
             "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "OMP_NUM_THREADS")
    env = {name: os.environ[name] for name in names if name in os.environ}
    server = StdioServerParameters(command=sys.executable, args=["-m", "localqwen.cli.start", "mcp"], env=env)

    async def main():
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        async with Client(server) as client:
            assert client.server_info.name == "localqwen"
            tools = [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool("testplug_echo", {"text": "hi", "repeat": 3}, progress_callback=on_progress)
            return tools, result, progress

    tools, result, progress = anyio.run(main)
    assert "testplug_echo" in tools
    echo_checks(result, progress)
    written = Path(result.structured_content["files"][0])
    assert written.is_relative_to(isolated_home) and written.read_text() == "hi\nhi\nhi"


def http_client(url: str, **headers: str):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60)))


def test_mcp_over_http_on_the_api_server(plugins_env, start_api):
    api = start_api()
    url = f"http://127.0.0.1:{api.port}/mcp"

    async def main():
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        async with http_client(url) as client:
            result = await client.call_tool("testplug_echo", {"text": "hi", "repeat": 3}, progress_callback=on_progress)
            link = next(c for c in result.content if c.type == "resource_link")
            read = await client.read_resource(link.uri)
            return result, progress, read

    result, progress, read = anyio.run(main)
    echo_checks(result, progress)
    assert read.contents[0].text == "hi\nhi\nhi"


def test_mcp_over_http_follows_the_api_rules(plugins_env, start_api):
    import httpx

    api = start_api(api_key="k" * 12)
    url = f"http://127.0.0.1:{api.port}/mcp"
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream", "Authorization": "Bearer " + "k" * 12}
    assert httpx.post(url, json=hello, headers={"Accept": accept["Accept"]}).status_code == 401
    assert httpx.post(url, json=hello, headers={**accept, "Host": "evil.example"}).status_code == 421
    refused = httpx.post(url, json=hello, headers={**accept, "Origin": "https://evil.example"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "origin_not_allowed"
    assert httpx.post(url, json=hello, headers={**accept, "Origin": "http://localhost:3000"}).status_code == 200
    assert httpx.get(api.url.removesuffix("/v1") + "/health", headers=accept).json()["capabilities"]["mcp"]

    async def main():
        async with http_client(url, Authorization="Bearer " + "k" * 12) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert "testplug_echo" in anyio.run(main)


def test_a_tool_call_waits_in_its_engines_queue_and_a_full_line_is_refused(plugins_env, isolated_home):
    # The same queues as the API's chat completions: while a generation holds the engine and the
    # line behind it is full (max_waiting 0 here), a call is refused with when to retry.
    from mcp import Client

    from localqwen.app import Workbench
    from localqwen.server.catalog import plugin_queue
    from localqwen.server.mcp_server import build_mcp_server
    from localqwen.server.queues import Queues

    bench = Workbench.create()
    queues = Queues(max_waiting=0)

    async def main():
        async with Client(build_mcp_server(bench, queues), raise_exceptions=False) as client:
            generating = queues.ticket(plugin_queue(bench, "testplug"))  # an API request holding the engine
            refused = await client.call_tool("testplug_echo", {"text": "hi", "repeat": 1})
            generating.release()
            served = await client.call_tool("testplug_echo", {"text": "hi", "repeat": 1})
            return refused, served, queues.state()

    refused, served, state = anyio.run(main)
    assert refused.is_error and "busy" in refused.content[0].text and "try again in" in refused.content[0].text
    assert not served.is_error and served.content[0].text == "hi"
    assert state[plugin_queue(bench, "testplug")] == {"generating": 0, "waiting": 0, "max_waiting": 0}  # tickets back
