"""``localqwen serve``: the OpenAI-compatible API on 127.0.0.1 (see ``localqwen.server.plan`` for the rules)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind. Anything but loopback needs an API key."),
    port: int = typer.Option(8765, "--port", help="Port to listen on."),
    listen: bool = typer.Option(False, "--listen", help="Listen on all interfaces (0.0.0.0); needs an API key."),
    api_key: str = typer.Option("", "--api-key", help="Key clients must send as 'Authorization: Bearer KEY'."),
    api_key_file: str = typer.Option("", "--api-key-file", help="Read the API key from this file."),
    max_body: int = typer.Option(25, "--max-body-mb", help="Largest request body accepted, in MB."),
    queue: int = typer.Option(4, "--queue", help="Requests that may wait per model while one generates."),
) -> None:
    """Serve the models and every plugin chat as an OpenAI-compatible API (/v1/chat/completions...)."""
    from localqwen.server.plan import ServeConfigError, plan_serve

    try:
        plan = plan_serve(host=host, port=port, listen=listen, api_key=api_key, api_key_file=api_key_file or None,
                          max_body=max_body * 2**20, max_waiting=queue)
    except ServeConfigError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    import importlib.util
    import socket

    missing = [name for name in ("uvicorn", "starlette") if importlib.util.find_spec(name) is None]
    if missing:
        typer.secho(f"error: {', '.join(missing)} not installed: pip install 'localqwen[serve]'", fg="red", err=True)
        raise typer.Exit(2)
    with socket.socket(socket.AF_INET6 if ":" in plan.host else socket.AF_INET) as probe:
        try:
            probe.bind((plan.host, plan.port))
        except OSError as exc:
            typer.secho(f"error: cannot listen on {plan.host}:{plan.port}: {exc.strerror or exc}", fg="red", err=True)
            raise typer.Exit(2) from None

    from localqwen.cli.common import workbench
    from localqwen.server.run import serve as run_server

    bench = workbench()
    typer.echo(f"LocalQwen API: {plan.url}  (OpenAI-compatible; GET {plan.url}/models lists the models)")
    if plan.api_key:
        typer.echo("clients must send 'Authorization: Bearer <your key>'")
    run_server(bench, plan)
