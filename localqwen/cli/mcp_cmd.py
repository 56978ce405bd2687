"""``localqwen mcp``: every plugin action as an MCP tool over stdin/stdout (Claude Desktop, the inspector...).

The same server is also at ``/mcp`` on ``localqwen serve``'s port (Streamable HTTP).
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp() -> None:
    """Serve every plugin action (and knowledge-base search) as MCP tools over stdio."""
    from localqwen.server.mcp_server import mcp_available

    if not mcp_available():
        typer.secho("error: the MCP SDK is not installed: pip install 'localqwen[serve]'", fg="red", err=True)
        raise typer.Exit(2)
    import anyio

    from localqwen.cli.common import workbench
    from localqwen.server.mcp_server import run_stdio

    # stdout carries the protocol: the SDK points fd 1 at stderr while serving, so stray prints
    # (a plugin's, a library's) cannot break a message; warnings go to stderr as always.
    anyio.run(run_stdio, workbench())
