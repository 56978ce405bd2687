"""The memory chat: recall -> answer with the engine -> extraction in the background.

Each turn: memories relevant to the message are recalled (the "recall: <path>" step shows which
and how), the model answers with them in its system prompt, and the turn is queued for fact
extraction on a background thread (the answer never waits for it; failures surface as a Warning
on the next turn). Commands: ``/memories``, ``/search Q``, ``/forget ID``, ``/persona NAME``,
``/help``; "forget that I ..." forgets the matching memory and says which. The persona is kept
in the session's metadata (a user may keep several).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from localqwen.plugin_api import events as ev
from localqwen.plugin_api.chat import plain_history
from localqwen_memory.extraction import BackgroundExtractor, Extractor, Turn
from localqwen_memory.prompts import Prompts
from localqwen_memory.recall import (
    TOKEN_PATH,
    Recall,
    memory_date,
    rank_memories,
    text_recall,
    text_recall_prompt,
)
from localqwen_memory.relative_dates import relative_times
from localqwen_memory.store import MemoryHit, MemoryRecord, MemoryStore
from localqwen_memory.updates import forget_by_id, forget_matching, forget_request

if TYPE_CHECKING:
    from localqwen.plugin_api import ChatRequest, Context

# ``settings`` below is the plugin's MemorySettings (plugin.py imports this module, not the reverse).
MemorySettings = Any
COMMANDS = "/memories, /search QUERY, /forget ID, /persona NAME, /help"
HISTORY_MESSAGES = 8  # recent messages sent along: memory covers the rest
BROWSER_COLUMNS = ["id", "kind", "memory", "date", "times", "source", "status", "consolidation"]


def browser_row(memory: MemoryRecord, score: float | None = None) -> list[Any]:
    """One memory as the browser tables show it (its source turn, and a consolidation badge)."""
    badge = {"pending": "○ pending", "consolidated": f"● {memory.adapter_id or 'consolidated'}",
             "excluded": "✕ excluded"}[memory.consolidation]
    forgotten = memory.status == "forgotten"
    row = [memory.id, memory.kind, memory.statement if not forgotten else "(forgotten)",
           memory_date(memory.valid_from), "" if forgotten else times_meant(memory), memory.source,
           memory.status, badge]
    return row if score is None else [*row, round(score, 4)]


def times_meant(memory: MemoryRecord) -> str:
    """The dates its relative times meant ("last Friday: Friday 14 July 2023"), as recall shows them
    to the model. A column of its own: the memory's text stays as said, which is what is edited."""
    text = memory.statement
    return "; ".join(f"{text[found.start:found.end]}: {found.shown}"
                     for found in relative_times(text, memory.valid_from))


def memories_table(memories: list[MemoryRecord], title: str) -> ev.Table:
    return ev.Table(title=title, columns=BROWSER_COLUMNS, rows=[browser_row(m) for m in memories])


def hits_table(hits: list[MemoryHit], title: str) -> ev.Table:
    return ev.Table(title=title, columns=[*BROWSER_COLUMNS, "score"], rows=[browser_row(h.memory, h.score) for h in hits])


def persona_of(metadata: dict[str, Any], settings: MemorySettings) -> str:
    return str(metadata.get("persona") or settings.persona)


def choose_recall(ctx: Context, store: MemoryStore, query: str, persona: str, prompts: Prompts,
                  settings: MemorySettings, engine: Any = None) -> Recall:
    """The recall path for this turn: token recall when ``engine`` carries a memory adapter this
    plugin consolidated, text recall otherwise (and for what token recall did not pick).

    On the token path the model is asked at ``<recall>`` and its memory head picks among the
    persona's active memories only (so a memory forgotten since the consolidation is never picked).
    The chosen memory goes into the prompt with its stored text, the source of truth; what the model
    decoded for it is shown in the step, beside the text recall of the memories not consolidated yet.
    """
    from localqwen_memory.consolidation.swap import recaller

    token = recaller(engine) if engine is not None else None
    if token is None:
        return text_recall(store, query, persona, prompts, k=settings.recall_k)
    started = time.perf_counter()
    allowed = {str(m.id) for m in store.list(persona)}
    outcome = token.recall([{"role": "user", "content": query}], allowed=allowed)
    if outcome.path != "token" or outcome.memory_id is None:
        recall = text_recall(store, query, persona, prompts, k=settings.recall_k)
        recall.notes.append(f"token recall not used: {outcome.reason}")
        return recall
    chosen = store.get(int(outcome.memory_id))
    rest = text_recall(store, query, persona, prompts, k=max(0, settings.recall_k - 1), exclude={chosen.id})
    hits = [MemoryHit(chosen, outcome.confidence, {"head": outcome.confidence}), *rest.hits]
    recall = text_recall_prompt(hits, persona, prompts)
    recall.path = TOKEN_PATH
    recall.elapsed_ms = (time.perf_counter() - started) * 1000
    recall.notes.append(f"token recall picked #{chosen.id} (confidence {outcome.confidence:.2f}); "
                        f"the model decoded: {outcome.text!r}")
    return recall


def respond(request: ChatRequest, ctx: Context, store: MemoryStore, settings: MemorySettings,
            background: BackgroundExtractor) -> Iterator[Any]:
    persona = persona_of(request.metadata, settings)
    for warning in background.take_warnings(request.session_id):
        yield ev.Warning(message=warning)
    text = request.text.strip()
    if text.startswith("/"):
        yield from command(text, request, store, settings)
        return
    what = forget_request(text)
    if what is not None:
        result = forget_matching(store, what, persona)
        yield ev.TextDelta(text=result.message)
        yield ev.Done(summary=result.message, result={"forgotten": result.forgotten.id if result.forgotten else None})
        return
    prompts = Prompts.load(ctx.paths.config_dir)
    try:
        engine = ctx.engine(task="text")
    except Exception as exc:  # no model yet, out of memory...: say it in the chat, with what to do
        message = (f"No model could be loaded for the chat: {type(exc).__name__}: {exc}. "
                   "Pick or download one on the Models screen.")
        yield ev.Error(message=message)
        yield ev.Done(status="failed", summary=str(exc))
        return
    recall = choose_recall(ctx, store, text, persona, prompts, settings, engine)
    yield recall.step()
    messages = [{"role": "system", "content": recall.system_prompt}, *plain_history(request.history, keep=HISTORY_MESSAGES),
                {"role": "user", "content": text}]
    answer: list[str] = []
    for delta in engine.stream(messages, settings=request.generation_settings(max_new_tokens=settings.max_new_tokens),
                               cancel=ctx.cancel):
        answer.append(delta)
        yield ev.TextDelta(text=delta)
    result = engine.last_result
    turn = Turn(user=text, assistant="".join(answer), session_id=request.session_id,
                message_index=len(request.history))
    if settings.extract and not ctx.cancel.cancelled:
        background.submit(Extractor(store, prompts, engine, max_new_tokens=settings.extraction_max_new_tokens),
                          turn, persona)
    else:  # no extraction: the raw turn is still remembered
        Extractor(store, prompts, engine).store_raw(turn, persona)
    usage: dict[str, Any] = {"recall": recall.to_dict(), "persona": persona}
    if result is not None:
        usage.update(prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens,
                     finish_reason=result.finish_reason)
    yield ev.Done(result=usage)


def command(text: str, request: ChatRequest, store: MemoryStore, settings: MemorySettings) -> Iterator[Any]:
    name, _, rest = text[1:].partition(" ")
    rest = rest.strip()
    persona = persona_of(request.metadata, settings)
    if name == "memories":
        memories = store.list(persona, limit=50)
        yield memories_table(memories, f"Memories of {persona} (newest first, up to 50)")
        yield ev.Done(summary=f"{len(memories)} memories", result={"memories": [m.id for m in memories]})
    elif name == "search" and rest:
        hits = rank_memories(store, rest, persona, k=10)  # the order recall itself would pick them in
        yield hits_table(hits, f"Memories matching: {rest}")
        yield ev.Done(summary=f"{len(hits)} result(s)", result={"memories": [h.memory.id for h in hits]})
    elif name == "forget" and rest.lstrip("#").isdigit():
        result = forget_by_id(store, int(rest.lstrip("#")), persona)
        yield ev.TextDelta(text=result.message)
        yield ev.Done(status="ok" if result.forgotten else "failed", summary=result.message,
                      result={"forgotten": result.forgotten.id if result.forgotten else None})
    elif name == "persona":
        if rest:
            request.metadata["persona"] = rest[:200]
            message = f"This conversation now uses the memories of persona '{rest[:200]}'."
        else:
            personas = ", ".join(store.personas()) or "none yet"
            message = f"This conversation uses persona '{persona}' (personas with memories: {personas})."
        yield ev.TextDelta(text=message)
        yield ev.Done(summary=message, result={"persona": request.metadata.get("persona", persona)})
    elif name == "help":
        message = (f"Commands: {COMMANDS}. Say \"forget that ...\" to forget a memory; everything else is "
                   "answered with what I remember, and remembered.")
        yield ev.TextDelta(text=message)
        yield ev.Done(summary=message)
    else:
        usage = {"search": "/search needs a query", "forget": "/forget needs a memory id (see /memories)"}
        message = usage.get(name, f"unknown command /{name}") + f"; the commands are {COMMANDS}"
        yield ev.Error(message=message)
        yield ev.Done(status="failed", summary=message)
