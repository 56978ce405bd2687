"""Hot-swap: a new memory adapter goes into the running transformers engine without a restart;
the one it replaces stays loaded for rollback.

The engine keeps its model and tokenizer; the first swap wraps the model in PEFT and adds the
memory tokens to the tokenizer, later swaps load the adapter beside the active one and switch.
Swapping waits for the engine's generation lock, so no answer is ever produced half with one
adapter and half with the other. The state lives on the engine (``engine.memory_slot``), set
only here: the engine itself needs no change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen_memory.consolidation.memory_head import HEAD_CONFIG, LoadedHead, load_head
from localqwen_memory.consolidation.special_tokens import add_memory_tokens, memory_token_ids, set_token_rows
from localqwen_memory.consolidation.token_recall import TokenRecaller

SLOT_ATTRIBUTE = "memory_slot"


class SwapError(RuntimeError):
    """The adapter cannot go into this engine; the message says why."""


@dataclass
class _Loaded:
    name: str
    folder: Path
    head: LoadedHead


@dataclass
class MemorySlot:
    active: _Loaded | None = None
    previous: _Loaded | None = None
    history: list[str] = field(default_factory=list)  # adapter names in the order they were swapped in


def slot(engine: Any) -> MemorySlot:
    existing = getattr(engine, SLOT_ATTRIBUTE, None)
    if existing is None:
        existing = MemorySlot()
        setattr(engine, SLOT_ATTRIBUTE, existing)
    return existing


def _lock(engine: Any) -> Any:
    # The transformers engine's one-generate-at-a-time lock (a private attribute, read here only).
    lock = getattr(engine, "_lock", None)
    if lock is None:
        raise SwapError(f"{engine!r} has no generation lock: hot-swap needs the transformers engine")
    return lock


def _adapter_name(folder: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", folder.name) or "memory"


def swap_in(engine: Any, folder: str | Path) -> MemorySlot:
    """Load the memory adapter in ``folder`` into ``engine`` and make it active."""
    from peft import PeftModel
    from transformers import AutoTokenizer

    folder = Path(folder)
    if getattr(engine, "backend", "") != "transformers":
        raise SwapError(f"memory adapters need the transformers backend, not {getattr(engine, 'backend', '?')!r}")
    if not (folder / HEAD_CONFIG).is_file() or not (folder / "adapter_config.json").is_file():
        raise SwapError(f"{folder} is not a memory adapter (needs adapter_config.json and {HEAD_CONFIG})")
    head = load_head(folder)
    trained_ids = memory_token_ids(AutoTokenizer.from_pretrained(folder))
    state = slot(engine)
    with _lock(engine):
        engine.ensure_open()
        ids = add_memory_tokens(engine.tokenizer)
        if ids != trained_ids:
            raise SwapError(f"the adapter was trained with token ids {trained_ids} but this engine's tokenizer gives "
                            f"{ids}: it belongs to another base model")
        model = engine.model
        name = _adapter_name(folder)
        while name in state.history:
            name += "_"
        if isinstance(model, PeftModel):
            model.load_adapter(str(folder), adapter_name=name)
            model.set_adapter(name)
        else:
            if len(engine.tokenizer) > model.get_input_embeddings().weight.shape[0]:
                raise SwapError("the engine's model has no room for the memory tokens; load it through consolidation")
            set_token_rows(model, ids)
            model = PeftModel.from_pretrained(model, str(folder), adapter_name=name)
            model.eval()
            engine.model = model
        # Keep two: the active one and the one before it; older ones are unloaded.
        if state.previous is not None and state.previous.name in model.peft_config:
            model.delete_adapter(state.previous.name)
        state.previous, state.active = state.active, _Loaded(name, folder, head)
        state.history.append(name)
    return state


def rollback(engine: Any) -> MemorySlot:
    """Make the previous adapter active again (the current one becomes 'previous')."""
    state = slot(engine)
    if state.previous is None:
        raise SwapError("there is no previous memory adapter to roll back to")
    with _lock(engine):
        engine.model.set_adapter(state.previous.name)
        state.active, state.previous = state.previous, state.active
    return state


def recaller(engine: Any) -> TokenRecaller | None:
    """Token recall for the engine's active memory adapter, or None when it has none."""
    state = getattr(engine, SLOT_ATTRIBUTE, None)
    if state is None or state.active is None:
        return None
    return TokenRecaller(engine.model, engine.tokenizer, state.active.head, lock=_lock(engine))
