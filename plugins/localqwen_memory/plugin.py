"""The memory plugin: a chat that remembers (``@chat``), a memory browser (list/search/forget,
export/import as JSON) and its evaluation suites.

SQLite is the source of truth for memories (store.py); vectors live in the shared LanceDB store
and can be rebuilt from it. Two recall paths: text recall (recall.py, works for every model) and
token recall (consolidation/, for a model consolidated by this plugin)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from localqwen.plugin_api import Context, Plugin, Requirements, action
from localqwen_memory.consolidation.job import ConsolidateForm


class MemorySettings(BaseModel):
    """``[plugins.memory]`` settings."""

    model: str = Field("", description="Model for the chat and for extraction (catalog id, folder or .gguf); "
                                       "empty = default.")
    persona: str = Field("default", description="Persona used when a session names none (/persona NAME).")
    recall_k: int = Field(6, ge=0, le=50, description="Memories injected into the prompt per turn (text recall).")
    extract: bool = Field(True, description="Extract facts from each turn in the background.")
    max_new_tokens: int = Field(512, ge=16, le=8192, description="Longest answer, in tokens.")
    extraction_max_new_tokens: int = Field(256, ge=32, le=4096, description="Longest extraction reply.")
    embedding_model: str = Field("", description="Embedder for memory vectors; empty = bundled all-MiniLM-L6-v2.")
    consolidate_every: str = Field("", description="Consolidate pending memories into the model every 30m/12h/3d/1w; "
                                                    "empty = on demand only. A run that fell due while the app "
                                                    "was closed runs at the next start.")


class Memory(Plugin):
    id = "memory"
    title = "Memory chat"
    description = "A chat that remembers what you tell it, recalls it with dates and sources, and forgets on request."
    # The default 2B model as GGUF Q4_K_M (~1.9 GB by the device plan) and the bundled embedder.
    requirements = Requirements(task="text", min_memory_gb=2.5)
    config_model = MemorySettings

    @action(form=ConsolidateForm, title="Consolidate",
            description="Learn pending memories into the model (LoRA + memory head), hot-swap the new adapter.")
    def consolidate(self, form: ConsolidateForm, ctx: Context) -> Iterator[Any]:
        from localqwen_memory.consolidation.job import run_consolidation

        yield from run_consolidation(ctx, form)


__all__ = ["Memory", "MemorySettings"]
