"""``localqwen doctor``: what this machine has and how every catalog model would run on it."""

from __future__ import annotations

import json
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def runtime_services():
    """Services from the config file (no plugins loaded)."""
    from localqwen.config import load_config
    from localqwen.paths import app_paths
    from localqwen.services import Services

    paths = app_paths()
    config, error = load_config(paths.config_file)
    if error is not None:
        typer.secho(f"warning: {error} (using defaults)", fg="yellow", err=True)
    return Services(paths, config)


def doctor(as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Show the devices found and the plan (backend, dtype, quantization, memory) per model."""
    from localqwen.runtime import catalog

    services = runtime_services()
    host = services.device.host
    plans = []
    for entry in catalog.CATALOG:
        task = "vision" if entry.vision else "text"
        plans.append(services.device.plan(entry.info(), task))
    security = security_report(services.config)
    if as_json:
        typer.echo(json.dumps({"host": host.to_dict(), "plans": [p.to_dict() for p in plans],
                               "security": security}, indent=2))
        return
    typer.echo(f"System: {host.system}, {host.cpu_cores} CPU cores, RAM {host.ram_available_gb:.1f} of "
               f"{host.ram_total_gb:.1f} GB free")
    flags = [name for name, present in (("AVX2", host.avx2), ("AVX-512", host.avx512), ("bf16", host.cpu_bf16))
             if present]
    typer.echo(f"CPU features: {', '.join(flags) or 'none of AVX2 / AVX-512 / bf16'}")
    if host.cuda:
        for device in host.cuda:
            typer.echo(f"CUDA {device.index}: {device.name}, {device.free_gb:.1f} of {device.total_gb:.1f} GB free, "
                       f"compute {device.capability_str}, bf16 {'yes' if device.bf16 else 'no'}")
    else:
        typer.echo("CUDA: none")
    typer.echo(f"Apple MPS: {'yes' if host.mps else 'no'}")
    typer.echo(f"llama.cpp: {'installed' if host.llama_cpp else 'not installed'}; "
               f"bitsandbytes: {'installed' if host.bitsandbytes else 'not installed / no CUDA'}")
    if services.config.runtime.remote_url:
        typer.echo(f"Remote server: {services.config.runtime.remote_url}")
    typer.echo("")
    for plan in plans:
        typer.echo(plan.explain())
    typer.echo("")
    typer.echo("Security (what LocalQwen checks before it trusts a file, a request or a second process):")
    for name, text in security.items():
        typer.echo(f"  {name}: {text}")


def security_report(config: Any) -> dict[str, str]:
    """What is protected and how, one line per area (tests/hardening holds a case for each;
    bench/bench_fault_report.py runs them)."""
    from localqwen.retrieval.isolated_reader import ParseLimits
    from localqwen.web.guard import DEFAULT_MAX_FAILURES, DEFAULT_WINDOW_S

    trusted = ", ".join(config.runtime.trust_remote_code) or "none"
    limits = ParseLimits()
    return {
        "models": "safetensors only (pickle .bin/.pt refused) for every load: engine, training, evaluation, "
                  "merge, GGUF export, wizard",
        "model code": f"trust_remote_code only for models in runtime.trust_remote_code (now: {trusted}); "
                      "a job file cannot turn it on",
        "GGUF": "header counts, dimensions and string lengths checked against the file size before llama.cpp "
                "reads it",
        "web view and API": "on loopback, requests for other host names (DNS rebinding) and cross-site Origins "
                            f"are refused; no CORS headers; {DEFAULT_MAX_FAILURES} failed logins per "
                            f"{DEFAULT_WINDOW_S:.0f} s, then 429",
        "documents": f"each parsed in a worker process ({limits.timeout_s:.0f} s + {limits.timeout_s_per_mb:.0f} s/MB, "
                     f"{limits.memory_mb} MB address space); a hostile file fails alone; named pipes refused",
        "two processes": "knowledge-base commits and captioning runs on one folder are serialised by lock files; "
                         "recovery never rolls back a live writer",
        "outputs": "written atomically with your umask's permissions; captions.csv cells starting with = + - @ "
                   "are escaped",
    }
