"""The memory plugin: a chat that remembers (``@chat``), a memory browser (list/search/forget,
export/import as JSON) and its evaluation suites.

SQLite is the source of truth for memories (store.py); vectors live in the shared LanceDB store
and can be rebuilt from it. Two recall paths: text recall (recall.py, works for every model) and
token recall (consolidation/, for a model consolidated by this plugin)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from localqwen.plugin_api import (
    ChatRequest,
    Context,
    Form,
    Plugin,
    Requirements,
    Widget,
    action,
    chat,
    chat_panel,
    field,
)
from localqwen.plugin_api import events as ev
from localqwen_memory.consolidation.job import ConsolidateForm

PANEL_MEMORIES = 8  # the newest memories shown beside the chat; the browser (list/search) shows all


class MemorySettings(BaseModel):
    """``[plugins.memory]`` settings."""

    model: str = Field("", description="Model for the chat and for extraction (catalog id, folder or .gguf); "
                                       "empty = default.")
    persona: str = Field("default", description="Persona used when a session names none (/persona NAME).")
    recall_k: int = Field(6, ge=0, le=50, description="Memories injected into the prompt per turn (text recall).")
    extract: bool = Field(True, description="Extract facts from each turn in the background.")
    max_new_tokens: int = Field(512, ge=16, le=8192, description="Longest answer, in tokens.")
    extraction_max_new_tokens: int = Field(256, ge=32, le=4096, description="Longest extraction reply.")
    embedding_model: str = Field("", description="Embedder for memory vectors; empty = bundled bge-small-en-v1.5 "
                                                   "(all-MiniLM-L6-v2 where that is not installed).")
    consolidate_every: str = Field("", description="Consolidate pending memories into the model every 30m/12h/3d/1w; "
                                                    "empty = on demand only. A run that fell due while the app "
                                                    "was closed runs at the next start.")


class AddForm(Form):
    text: str = field(label="Memory", widget=Widget.TEXTAREA, placeholder="My sister Ann lives in Porto")
    persona: str = field("default", label="Persona")


class ListForm(Form):
    persona: str = field("default", label="Persona")
    status: Literal["active", "superseded", "forgotten", "all"] = field("active", label="Status")
    limit: int = field(100, label="At most", ge=1, le=10000)


class SearchForm(Form):
    query: str = field(label="Query")
    persona: str = field("default", label="Persona")
    k: int = field(10, label="Results", ge=1, le=100)


class ForgetForm(Form):
    id: int = field(label="Memory id", ge=1)


class ExportForm(Form):
    output: Path = field(label="Output file", widget=Widget.FILE, help="JSON; history and tombstones included")
    persona: str = field("default", label="Persona")


class ImportForm(Form):
    input: Path = field(label="Input file", widget=Widget.FILE, help="A JSON file written by export")
    persona: str = field("", label="Persona", help="Empty = the persona named in the file")


class EvaluateForm(Form):
    suite: Literal["locomo", "updates", "consolidation"] = field("locomo", label="Suite")
    data: str = field("", label="LoCoMo file", help="Empty = ../shared/data/locomo/locomo10.json from the repository")
    conversations: int = field(0, label="Conversations", ge=0, help="LoCoMo: evaluate only the first N (0 = all)")
    mode: Literal["hybrid", "bm25"] = field("hybrid", label="Retrieval", advanced=True,
                                            help="LoCoMo: hybrid = BM25 + MiniLM vectors")
    facts: int = field(300, label="Facts per batch", ge=2, le=2000, advanced=True,
                       help="consolidation: synthetic facts per batch of the proof (300: about 25 minutes here)")


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

    # ------------------------------------------------------------ helpers
    def _settings(self, ctx: Context) -> MemorySettings:
        return MemorySettings.model_validate(ctx.settings or {})

    def _store(self, ctx: Context):
        """One store per database for the plugin's lifetime, so its search index stays warm."""
        from localqwen_memory.store import open_store

        stores = self.__dict__.setdefault("_stores", {})
        key = str(ctx.database.path)
        if key not in stores:
            stores[key] = open_store(ctx)
        return stores[key]

    def _background(self):
        from localqwen_memory.extraction import BackgroundExtractor

        return self.__dict__.setdefault("_extractor", BackgroundExtractor())

    # ------------------------------------------------------------ chat
    @chat
    def respond(self, request: ChatRequest, ctx: Context) -> Iterator[Any]:
        """Answer with what is remembered; remember the turn in the background."""
        from localqwen_memory.chat import respond

        yield from respond(request, ctx, self._store(ctx), self._settings(ctx), self._background())

    @chat_panel
    def panel(self, metadata: dict[str, Any], ctx: Context) -> list[ev.Table]:
        """Beside the chat: whose memories these are, how many (and how extraction went),
        and the latest ones with their source turn and consolidation badge."""
        from localqwen_memory.chat import memories_table, persona_of

        persona = persona_of(metadata, self._settings(ctx))
        store = self._store(ctx)
        counts = store.stats()["personas"].get(persona, {})
        status, counters = counts.get("status", {}), counts.get("counters", {})
        summary = ev.Table(title=f"Memory of {persona} (/persona NAME to switch)", columns=["what", "count"], rows=[
            ["active", status.get("active", 0)], ["superseded", status.get("superseded", 0)],
            ["forgotten", status.get("forgotten", 0)],
            ["consolidated", counts.get("consolidation", {}).get("consolidated", 0)],
            ["replies that did not parse", counters.get("extraction_parse_failed", 0)],
            ["extractions that kept only the raw turn", counters.get("extraction_raw_fallback", 0)]])
        latest = memories_table(store.list(persona, limit=PANEL_MEMORIES),
                                "Latest memories (/forget ID, /search QUERY)")
        return [summary, latest]

    # ------------------------------------------------------------ the memory browser
    @action(form=AddForm, title="Add a memory")
    def add(self, form: AddForm, ctx: Context) -> Iterator[Any]:
        """Remember a fact (a contradicted older fact is superseded; a duplicate is not added)."""
        from localqwen_memory.chat import memories_table
        from localqwen_memory.store import MemoryStoreError
        from localqwen_memory.updates import remember

        if not form.text.strip():
            yield ev.Error(message="the memory text is empty", field="text")
            yield ev.Done(status="failed", summary="the memory text is empty")
            return
        try:
            decision = remember(self._store(ctx), form.text, persona=form.persona, respect_tombstones=False)
        except MemoryStoreError as exc:
            yield ev.Error(message=str(exc), field="persona")
            yield ev.Done(status="failed", summary=str(exc))
            return
        memory = decision.memory
        shown = [memory, *decision.replaced] if memory is not None else []
        yield memories_table(shown, f"Memory {decision.action}")
        summary = f"memory #{memory.id} {decision.action}" if memory is not None else decision.action
        if decision.replaced:
            summary += " (supersedes " + ", ".join(f"#{m.id}" for m in decision.replaced) + ")"
        yield ev.Done(summary=summary, result={"id": memory.id if memory else None, "action": decision.action,
                                               "superseded": [m.id for m in decision.replaced]})

    @action(form=ListForm, title="List memories")
    def list(self, form: ListForm, ctx: Context) -> Iterator[Any]:
        """The persona's memories, newest first, with their source turn and consolidation badge."""
        from localqwen_memory.chat import memories_table

        store = self._store(ctx)
        memories = store.list(form.persona, status=None if form.status == "all" else form.status, limit=form.limit)
        yield memories_table(memories, f"Memories of {form.persona} ({form.status})")
        stats = store.stats()
        counters = stats["personas"].get(form.persona, {}).get("counters", {})
        failed = sum(v for k, v in counters.items() if k in ("extraction_failed", "extraction_engine_error"))
        if failed:
            yield ev.Warning(message=f"{failed} extraction(s) failed for {form.persona}; their raw turns were kept "
                                     f"(counters: {counters})")
        yield ev.Done(summary=f"{len(memories)} memories", result={"memories": [m.to_dict() for m in memories],
                                                                   "stats": stats})

    @action(form=SearchForm, title="Search memories")
    def search(self, form: SearchForm, ctx: Context) -> Iterator[Any]:
        """Hybrid search (BM25 + vectors) over the persona's facts and raw turns, ranked as the chat's
        text recall ranks them (``recall.rank_memories``), so a search shows what recall would pick."""
        from localqwen_memory.chat import hits_table
        from localqwen_memory.recall import rank_memories

        hits = rank_memories(self._store(ctx), form.query, form.persona, k=form.k)
        yield hits_table(hits, f"Memories matching: {form.query}")
        yield ev.Done(summary=f"{len(hits)} result(s)", result={"hits": [
            {"id": h.memory.id, "score": h.score, "text": h.memory.statement, "kind": h.memory.kind} for h in hits]})

    @action(form=ForgetForm, title="Forget a memory")
    def forget(self, form: ForgetForm, ctx: Context) -> Iterator[Any]:
        """Out of recall and out of the next consolidation; a tombstone is kept."""
        from localqwen_memory.store import MemoryStoreError

        store = self._store(ctx)
        try:
            before = store.get(form.id)
            memory = store.forget(form.id)
        except MemoryStoreError as exc:
            yield ev.Error(message=str(exc), field="id")
            yield ev.Done(status="failed", summary=str(exc))
            return
        summary = f"forgot memory #{memory.id}" + (" (already forgotten)" if before.status == "forgotten" else "")
        yield ev.Done(summary=summary, result={"id": memory.id, "status": memory.status,
                                               "consolidation": memory.consolidation})

    @action(form=ExportForm, title="Export memories")
    def export(self, form: ExportForm, ctx: Context) -> Iterator[Any]:
        """Write a persona's memories (with history and tombstones) to a JSON file."""
        import json

        from localqwen.atomic import atomic_write_text

        data = self._store(ctx).export(form.persona)
        path = form.output.expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1))
        yield ev.FileWritten(path=str(path), description=f"{len(data['memories'])} memories of {form.persona}")
        yield ev.Done(summary=f"exported {len(data['memories'])} memories", result={"path": str(path),
                                                                                    "memories": len(data["memories"])})

    @action(form=ImportForm, title="Import memories", id="import")
    def import_(self, form: ImportForm, ctx: Context) -> Iterator[Any]:
        """Load an export; checked whole first, duplicates skipped."""
        from localqwen_memory.store import MemoryStoreError

        path = form.input.expanduser()
        try:
            text = path.read_text(encoding="utf-8")
            counts = self._store(ctx).import_(text, persona=form.persona or None)
        except (OSError, UnicodeDecodeError) as exc:
            message = f"cannot read {path}: {exc}"
            yield ev.Error(message=message, field="input")
            yield ev.Done(status="failed", summary=message)
            return
        except MemoryStoreError as exc:
            yield ev.Error(message=f"{path}: {exc}", field="input")
            yield ev.Done(status="failed", summary=str(exc))
            return
        yield ev.Done(summary=f"{counts['added']} added, {counts['skipped']} already there, "
                              f"{counts['tombstones']} tombstones", result=counts)

    @action(form=EvaluateForm, title="Evaluate")
    def evaluate(self, form: EvaluateForm, ctx: Context) -> Iterator[Any]:
        """Run an evaluation suite: locomo (evidence recall), updates (contradictions, forget) or
        consolidation (token recall after consolidating synthetic facts into a tiny model)."""
        if form.suite == "locomo":
            from localqwen_memory.locomo_eval import run_suite
        elif form.suite == "consolidation":
            from localqwen_memory.consolidation.consolidation_eval import run_suite
        else:
            from localqwen_memory.updates_eval import run_suite
        yield from run_suite(ctx, form)


__all__ = ["Memory", "MemorySettings"]
