"""``localqwen web``: the Gradio web view on 127.0.0.1 (see ``localqwen.web.server`` for the rules)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("web")(web)


def web(
    port: int = typer.Option(7860, "--port", help="Port to use; the next free one is taken if it is busy."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind. Anything but loopback needs --auth."),
    listen: bool = typer.Option(False, "--listen", help="Listen on all interfaces (0.0.0.0); needs --auth."),
    share: bool = typer.Option(False, "--share", help="Create a public Gradio share link; needs --auth."),
    auth: str = typer.Option("", "--auth", help="USER:PASSWORD required to open the page."),
    max_upload: str = typer.Option("50mb", "--max-upload", help="Largest upload accepted, e.g. 50mb."),
) -> None:
    """Start the web view and print its URL."""
    from localqwen.cli.common import workbench
    from localqwen.web.server import WebConfigError, launch, plan_launch

    try:
        plan = plan_launch(host=host, port=port, listen=listen, share=share, auth=auth or None, max_upload=max_upload)
    except WebConfigError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    bench = workbench()
    if plan.port != port:
        typer.secho(f"port {port} is busy; using {plan.port}", fg="yellow", err=True)

    def announce(result) -> None:
        typer.echo(f"LocalQwen web view: {plan.url}", nl=True)
        share_url = result[2] if isinstance(result, tuple) and len(result) > 2 else None
        if share_url:
            typer.echo(f"public share link: {share_url}")

    try:
        web_app, result = launch(plan, bench, block=False)
        announce(result)
        web_app.blocks.block_thread()
    except KeyboardInterrupt:
        pass
