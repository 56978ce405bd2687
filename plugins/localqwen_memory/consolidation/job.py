"""The ``consolidate`` action: the pending memories of a persona become a new memory adapter.

Runs as a job (the plugin's action through the job manager), streaming progress. It trains on
the store's consolidation set only (forgotten and superseded memories never enter it; old
memories that were forgotten since the last adapter are dropped from its bank and not
replayed), marks the learnt memories consolidated, records the adapter (the previous one is kept
for rollback) and hot-swaps it into a loaded transformers engine of the same model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localqwen.plugin_api import Context, Form, field
from localqwen.plugin_api import events as ev
from localqwen.plugin_api.background import events_from_thread

STATE_FILE = "consolidation_state.json"


class ConsolidateForm(Form):
    persona: str = field("default", label="Persona")
    model: str = field("", label="Base model", widget="folder",
                       help="A Qwen3 folder (transformers); empty = the plugin's model setting.")
    max_minutes: float = field(10.0, label="Time budget (minutes)", ge=0.5, le=600.0)
    swap: bool = field(True, label="Hot-swap", help="Load the new adapter into a running engine of this model.")


def state_path(ctx: Context, persona: str) -> Path:
    return ctx.data_dir / "consolidation" / persona / STATE_FILE


def read_state(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _base_folder(ctx: Context, model: str) -> Path:
    name = model or ctx.settings.get("model") or ctx.default_model("text")
    path = Path(str(name)).expanduser()
    if path.is_dir():
        return path
    resolved = ctx.models.resolve(name, format="transformers")
    if resolved.format != "transformers":
        raise ValueError(f"consolidation trains a transformers model; {name} resolved to {resolved.format}")
    return Path(resolved.path)


def run_consolidation(ctx: Context, form: ConsolidateForm) -> Iterator[Any]:
    from localqwen.retrieval.embeddings import get_embedder
    from localqwen_memory.consolidation.memory_head import KEY_EMBEDDER
    from localqwen_memory.consolidation.synthetic import general_rows
    from localqwen_memory.consolidation.train import ConsolidationSettings, MemoryItem, consolidate
    from localqwen_memory.store import open_store

    store = open_store(ctx)
    records = store.consolidation_set(form.persona)
    pending = [r for r in records if r.consolidation == "pending"]
    if not pending:
        yield ev.Done(summary=f"nothing to consolidate for persona {form.persona!r}", result={"consolidated": 0})
        return
    base = _base_folder(ctx, form.model)
    state_file = state_path(ctx, form.persona)
    state = read_state(state_file)
    previous = state.get("active")
    if previous and (not Path(previous).is_dir() or state.get("base_model") != str(base)):
        yield ev.Warning(message=f"previous adapter {previous} is missing or for another model; starting afresh")
        previous = None
    keep_old = {str(r.id) for r in records if r.consolidation == "consolidated"}
    yield ev.Step(step="vectors", title=f"Vectors for {len(pending)} memories")
    vectors = store.embeddings([r.id for r in pending], embedder=get_embedder(KEY_EMBEDDER, manager=ctx.device))
    memories = [MemoryItem(str(r.id), r.statement, v) for r, v in zip(pending, vectors, strict=True)]
    output = ctx.data_dir / "consolidation" / form.persona / time.strftime("adapter-%Y%m%d-%H%M%S")
    settings = ConsolidationSettings(max_seconds=form.max_minutes * 60)
    # Training reports through a callback; the job wants events (plugin_api.background).
    def work(emit):
        return consolidate(
            base, memories, output, general=general_rows(600), previous=previous, keep_old=keep_old,
            settings=settings, cancel=ctx.cancel,
            on_progress=lambda p: emit(ev.Progress(done=p.step, total=p.total, task=p.phase, unit="step",
                                                   message=f"{p.phase}: loss {p.loss:.3f}", eta_s=p.eta_s)))

    result = yield from events_from_thread(work, name="memory-consolidate")
    marked = store.mark_consolidated([int(i) for i in result.memory_ids], output.name)
    from localqwen.atomic import atomic_write_text

    state_file.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(state_file, json.dumps({"active": str(output), "previous": previous, "base_model": str(base),
                                              "finished_at": time.time(), "memories": len(result.bank_ids)}, indent=2))
    yield ev.FileWritten(path=str(output), description="memory adapter (LoRA + memory head)")
    swapped = False
    if form.swap:
        swapped = yield from _swap_into_loaded(ctx, base, output)
    yield ev.Done(summary=f"consolidated {marked} memories in {result.seconds:.0f} s"
                          + ("; swapped into the running engine" if swapped else ""),
                  result={"consolidated": marked, "adapter": str(output), "previous": previous,
                          "seconds": result.seconds, "steps": result.steps, "swapped": swapped})


def _swap_into_loaded(ctx: Context, base: Path, output: Path) -> Iterator[Any]:
    """Swap into an engine of ``base`` that is already loaded (never loads one just for this)."""
    from localqwen_memory.consolidation.swap import SwapError, swap_in

    engines = [ctx.device.get(key) for key in ctx.device.loaded]
    for engine in engines:
        if engine is not None and getattr(engine, "path", None) is not None and Path(engine.path) == base:
            try:
                swap_in(engine, output)
            except SwapError as exc:
                yield ev.Warning(message=f"not swapped: {exc}")
                return False
            return True
    return False


def start_if_due(workbench: Any, persona: str = "default") -> Any:
    """Start the consolidate job when ``consolidate_every`` says it is due (or overdue: the app
    was closed when it fell due); returns the job or None. Meant for the app's start and for a
    timer while it runs; the app is not a service, so nothing runs while it is closed."""
    from localqwen_memory.consolidation.schedule import is_due

    ctx = workbench.context("memory")
    every = str(ctx.settings.get("consolidate_every") or "")
    if not is_due(every, state_path(ctx, persona)):
        return None
    return workbench.start_action("memory", "consolidate", {"persona": persona},
                                  title=f"Consolidate memories ({persona}, every {every})")
