"""``localqwen plugins``: what is installed, what loaded, what failed and why."""

from __future__ import annotations

import json

import typer


def register(app: typer.Typer) -> None:
    app.command("plugins")(plugins)


def plugins(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    load: bool = typer.Option(True, "--load/--no-load", help="Import plugins to list their actions."),
) -> None:
    """List plugins with their actions and whether they chat; broken plugins are shown with the reason."""
    from localqwen.cli.common import workbench

    bench = workbench()
    host = bench.host
    infos = host.available()
    # Gathering the extensions calls each plugin's register hook, so one that fails there is listed as failed.
    extensions = bench.extensions if load else None
    loaded = {p.id: p for p in host.load_all()} if load else {}
    rows = []
    for info in infos:
        plugin = loaded.get(info.name)
        failure = host.failures.get(info.name)
        rows.append({
            "id": info.name,
            "title": getattr(plugin, "title", ""),
            "source": "built-in" if info.builtin else info.distribution,
            "status": "failed" if failure else ("loaded" if plugin else "not loaded"),
            "actions": [a.id for a in plugin.actions()] if plugin else [],
            "chat": bool(plugin and plugin.chats),  # offers a chat (`localqwen chat --plugin ID`)
            "adds": extensions.added_by(info.name) if plugin and extensions else {},
            "error": failure.reason if failure else "",
        })
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("plugin", "title", "source", "status", "chat", "actions", "adds")
    for row in rows:
        status = f"[red]failed: {row['error']}[/red]" if row["error"] else row["status"]
        adds = "; ".join(f"{kind.replace('_', ' ')}: {', '.join(names)}" for kind, names in row["adds"].items())
        table.add_row(row["id"], row["title"], row["source"], status, "✓" if row["chat"] else "",
                      ", ".join(row["actions"]), adds)
    Console().print(table if rows else "No plugins installed.")

