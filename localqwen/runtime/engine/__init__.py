"""One chat interface over transformers, llama.cpp and remote OpenAI-compatible servers.

    from localqwen.runtime.engine import load_engine, GenerationSettings
    engine = load_engine("qwen3-vl-2b-instruct")          # catalog id, hub repo, folder or .gguf
    for delta in engine.stream([{"role": "user", "content": "Hi"}]):
        print(delta, end="")
    print(engine.last_result.completion_tokens)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from localqwen.runtime.engine.base import (
    ChatResult,
    Engine,
    EngineError,
    GenerationSettings,
    ToolCall,
    UnsupportedSetting,
)
from localqwen.runtime.engine.tool_calls import parse_tool_calls

if TYPE_CHECKING:
    from localqwen.config import RuntimeSection
    from localqwen.runtime.device import DeviceManager
    from localqwen.runtime.model_manager import ModelManager
    from localqwen.runtime.plan import Plan

__all__ = [
    "BACKENDS", "ChatResult", "Engine", "EngineError", "GenerationSettings", "ToolCall", "UnsupportedSetting",
    "load_engine", "parse_tool_calls",
]

BACKENDS = ("auto", "transformers", "llama.cpp", "remote")


def load_engine(model: str | Path, *, models: ModelManager, device: DeviceManager, runtime: RuntimeSection,
                adapter: str | Path | None = None, backend: str = "auto", task: str = "text",
                force: bool = False) -> Engine:
    """Load (or reuse, through ``device``) an engine for ``model`` following this machine's plan.

    ``models`` resolves ids to files, ``device`` plans and keeps the loaded engines, ``runtime``
    is the ``[runtime]`` config section (remote server, trusted ids). ``backend`` forces one; ``auto`` uses the remote server when ``runtime.remote_url`` is set,
    llama.cpp for GGUF files (and for catalog models whose plan says GGUF), transformers otherwise.
    An adapter needs transformers. A model that will not fit raises with the plan's advice
    unless ``force``."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "remote" or (backend == "auto" and runtime.remote_url and adapter is None):
        return _load_remote(str(model), device, runtime)

    wanted = {"transformers": "transformers", "llama.cpp": "gguf"}.get(backend, "auto")
    if adapter is not None:
        if backend == "llama.cpp":
            raise EngineError("adapters need the transformers backend (llama.cpp runs merged GGUF files only)")
        wanted = "transformers"
    if wanted == "auto" and _is_catalog_without_files(models, model):
        # Nothing on disk yet: the plan picks the format (GGUF on a CPU host), then we fetch that.
        from localqwen.runtime import catalog

        first = device.plan(catalog.get(str(model)).info(), task)
        if first.backend == "llama.cpp":
            wanted = "gguf"
    resolved = models.resolve(model, format=wanted)
    # Plan for the files at hand: safetensors run through transformers, a GGUF through llama.cpp.
    if resolved.format == "transformers":
        info = replace(resolved.info, gguf_quants=[])
    else:
        info = replace(resolved.info, transformers=False, gguf_quants=resolved.info.gguf_quants or ["Q4_K_M"])
    plan = device.plan(info, task)
    if not plan.fits and not force:
        raise EngineError("this model will not fit here:\n" + plan.explain())
    key = f"{resolved.id}|{resolved.format}|{adapter or ''}"
    trust = models.trust_remote_code(resolved.id)

    def loader(step: Plan) -> Engine:
        if step.backend == "llama.cpp":
            from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

            gpu_layers = -1 if step.device == "cuda" else 0
            return LlamaCppEngine(resolved.path, model_id=resolved.id, mmproj=resolved.mmproj, plan=step,
                                  n_gpu_layers=gpu_layers)
        from localqwen.runtime.engine.transformers_backend import TransformersEngine

        return TransformersEngine(resolved.path, model_id=resolved.id, plan=step, adapter=adapter,
                                  trust_remote_code=trust)

    return device.load(key, info, task, loader, plan)


def _is_catalog_without_files(models, model: str | Path) -> bool | None:
    """True when ``model`` is a catalog id with nothing on disk yet (auto then downloads per plan)."""
    from localqwen.runtime import catalog

    entry = catalog.find(str(model))
    if entry is None or entry.wheel:
        return None
    return models.path(entry.id, "transformers") is None and models.path(entry.id, "gguf") is None


def _load_remote(model: str, device: DeviceManager, runtime: RuntimeSection) -> Engine:
    from localqwen.runtime.engine.remote_backend import RemoteEngine

    if not runtime.remote_url:
        raise EngineError("the remote backend needs runtime.remote_url (e.g. http://127.0.0.1:8000/v1)")
    key = f"remote|{runtime.remote_url}|{model}"
    engine = device.get(key)
    if engine is None:
        engine = RemoteEngine(runtime.remote_url, model_id=model, api_key_env=runtime.remote_api_key_env)
        from localqwen.runtime.plan import Plan

        plan = Plan(model, "text", "remote", "remote", None, None, 0.0, 0.0, True, [f"served by {runtime.remote_url}"])
        device.track(key, engine, plan)
    return engine
