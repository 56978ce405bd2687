"""One medical chat turn, and the chat's commands.

The plugin's ``@chat`` responder and its ``ask`` action both come here. A session's metadata (in
the one chat store) holds its choices (settings.SessionChoices: knowledge base, passages, model,
rules-only...), the patient profile (med-profile's profile.py, updated from every user turn) and
the running summary (summary_memory.py). Commands, from any chat view:

    /settings                     this session's choices
    /set NAME VALUE               change one (e.g. /set knowledge_base pubmed)
    /profile                      the patient profile as a table
    /profile set allergies penicillin   edit it (set / add / remove / clear FIELD ...)
    /audit-log [N]                the last N audits (default 10)

``achat`` is the same turn as an async iterator: the sync pipeline runs in a worker thread, so an
API server can serve several users at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from pydantic import ValidationError

from localqwen.plugin_api import ChatRequest, Context, events
from localqwen.plugin_api.chat import plain_history
from localqwen_medical.settings import MedicalConfig, SessionChoices, session_choices

COMMANDS = "/settings, /set NAME VALUE, /profile [set|add|remove|clear FIELD VALUES], /audit-log [N]"


class ModelLLM:
    """An engine with the two calls the pipeline makes.

    ``chat`` writes what the user reads (the draft, a refine, a chit-chat reply) with the answer's
    ``max_new_tokens`` and ``temperature``: the chat view's per-turn settings over the session's.
    ``complete`` is the router's and the query rewriter's structured call: its own small length and
    always greedy, because its reply is parsed (a route, a query) and must not change from run to
    run. The auditor's critic and the profile extraction call the engine with their own fixed,
    greedy settings for the same reason."""

    def __init__(self, engine: Any, *, max_new_tokens: int = 384, temperature: float = 0.0, cancel: Any = None) -> None:
        self.engine = engine
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.cancel = cancel
        self.last_result: Any = None  # the last answer call's result (token counts for the chat views)

    def chat(self, messages: list[dict[str, Any]], *, max_new_tokens: int | None = None) -> Any:
        self.last_result = self.engine.chat(messages, settings=self._settings(max_new_tokens, self.temperature),
                                            cancel=self.cancel)
        return self.last_result

    def complete(self, system: str, user: str, *, max_new_tokens: int | None = None) -> str:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return str(self.engine.chat(messages, settings=self._settings(max_new_tokens, 0.0), cancel=self.cancel).text)

    def _settings(self, max_new_tokens: int | None, temperature: float) -> Any:
        from localqwen.runtime.engine.base import GenerationSettings

        return GenerationSettings(max_new_tokens=max_new_tokens or self.max_new_tokens, temperature=temperature,
                                  seed=0)


def answer(request: ChatRequest, ctx: Context, config: MedicalConfig) -> Iterator[Any]:
    """The turn's events: a command's reply, or the pipeline's steps, evidence, verdict, answer, ``Done``."""
    text = request.text.strip()
    if text.startswith("/"):
        yield from command(text, request.metadata, audit_log_path=ctx.data_dir / "audit_log.jsonl")
        return
    try:
        choices = session_choices({"knowledge_base": config.knowledge_base, **request.metadata})
    except ValueError as exc:
        message = f"this session's settings are not valid: {exc}. Fix them with /set NAME VALUE."
        yield events.Error(message=message)
        yield events.Done(status="failed", summary=message)
        return
    request.metadata.update(choices.model_dump())
    if not text:
        message = "empty message: ask a health question (or /settings, /profile)"
        yield events.Error(message=message)
        yield events.Done(status="failed", summary=message)
        return
    engine = None
    if not choices.rules_only:
        try:
            engine = ctx.engine(choices.model or config.model or None, task="text")
        except Exception as exc:  # no model yet: the rules, term list and extractive drafting still answer
            yield events.Warning(message=f"no model could be loaded ({type(exc).__name__}: {exc}); "
                                         "answering with the rules and extractive drafting")
    yield from turn(request, ctx, config, choices, engine)


def turn(request: ChatRequest, ctx: Context, config: MedicalConfig, choices: SessionChoices,
         engine: Any) -> Iterator[Any]:
    from localqwen.retrieval.knowledge_base import KnowledgeBaseError
    from localqwen_medical.audit_log import AuditLog
    from localqwen_medical.pipeline import TurnInputs, run_turn
    from localqwen_medical.profile import Profile
    from localqwen_medical.summary_memory import build_history

    kb = None
    if choices.use_kb:
        try:
            kb = ctx.retrieval.get(choices.knowledge_base)
        except KnowledgeBaseError as exc:
            yield events.Warning(message=f"{exc}; answering without evidence (pick one with /set knowledge_base NAME)")
    profile = Profile.from_metadata(request.metadata)
    user_turn = sum(1 for m in request.history if m.get("role") == "user") + 1
    profile.update_from_turn(request.text, user_turn, engine)
    profile.save(request.metadata)
    if not profile.is_empty():
        yield events.Table(title="Patient profile", columns=["field", "value"],
                           rows=[line.split(": ", 1) for line in profile.lines()])
    patient = merge_patients(profile.to_patient(), request.metadata.get("patient"))
    plan = build_history(plain_history(request.history), request.metadata, engine=engine)
    wanted = request.generation_settings(max_new_tokens=choices.max_new_tokens)  # the chat view's, over the session's
    llm = (ModelLLM(engine, max_new_tokens=wanted.max_new_tokens, temperature=wanted.temperature, cancel=ctx.cancel)
           if engine is not None else None)
    inputs = TurnInputs(
        question=request.text, history=plan.messages, patient=patient,
        patient_summary=profile.summary() if not profile.is_empty() else "", kb=kb, kb_name=choices.knowledge_base,
        k=choices.k, min_relevance=config.min_relevance, min_similarity=config.min_similarity, llm=llm,
        engine=engine, max_refinements=config.max_refinements,
        audit_log=AuditLog.in_folder(ctx.data_dir), cancel=ctx.cancel)
    yield from run_turn(inputs)


def merge_patients(from_profile: Any, given: dict[str, Any] | None) -> Any:
    """The profile's patient with a given one (``ask --patient``) laid under it: lists joined, a
    field the conversation stated wins over the file's."""
    from localqwen_medical.case import Patient

    if not given:
        return from_profile
    base = Patient.from_dict(given)
    for name in ("allergies", "medications", "conditions"):
        setattr(base, name, list(dict.fromkeys([*getattr(base, name), *getattr(from_profile, name)])))
    for name in ("age", "sex", "pregnant"):
        if getattr(from_profile, name) is not None:
            setattr(base, name, getattr(from_profile, name))
    return base


# ---------------------------------------------------------------- commands
def command(text: str, metadata: dict[str, Any], *, audit_log_path: Any) -> Iterator[Any]:
    name, _, rest = text[1:].partition(" ")
    if name == "settings":
        yield from _show_settings(metadata)
    elif name == "set":
        yield from _set(rest, metadata)
    elif name == "profile":
        yield from _profile(rest, metadata)
    elif name == "audit-log":
        yield from _audit_log(rest, audit_log_path)
    else:
        yield from _fail(f"unknown command /{name}; the commands are {COMMANDS}")


def _fail(message: str) -> Iterator[Any]:
    yield events.Error(message=message)
    yield events.Done(status="failed", summary=message)


def _show_settings(metadata: dict[str, Any]) -> Iterator[Any]:
    try:
        shown = session_choices(metadata).model_dump()
    except ValueError as exc:
        shown = {name: metadata.get(name) for name in SessionChoices.model_fields}
        yield events.Warning(message=f"some settings are not valid: {exc}")
    yield events.TextDelta(text="This conversation's settings (change one with /set NAME VALUE):\n"
                                + "\n".join(f"- {key} = {value!r}" for key, value in shown.items()))
    yield events.Done(summary="settings", result={"settings": shown})


def _set(rest: str, metadata: dict[str, Any]) -> Iterator[Any]:
    key, _, value = rest.strip().partition(" ")
    if key not in SessionChoices.model_fields:
        yield from _fail(f"/set: no setting named {key!r}; the settings are {', '.join(SessionChoices.model_fields)}")
        return
    stored = {name: metadata[name] for name in SessionChoices.model_fields if name in metadata}
    try:
        chosen = SessionChoices.model_validate({**stored, key: value.strip()})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        yield from _fail(f"/set {key}: {problems}")
        return
    metadata.update(chosen.model_dump())
    yield events.TextDelta(text=f"{key} = {getattr(chosen, key)!r}")
    yield events.Done(summary=f"{key} set", result={"settings": chosen.model_dump()})


def _profile(rest: str, metadata: dict[str, Any]) -> Iterator[Any]:
    from localqwen_medical.profile import Profile, ProfileEditError, apply_edit

    profile = Profile.from_metadata(metadata)
    if rest.strip():
        try:
            change = apply_edit(profile, rest.strip())
        except ProfileEditError as exc:
            yield from _fail(f"/profile: {exc}")
            return
        profile.save(metadata)
        yield events.TextDelta(text=change)
    rows = [line.split(": ", 1) for line in profile.lines()]
    yield events.Table(title="Patient profile", columns=["field", "value"], rows=rows)
    yield events.Done(summary="profile", result={"profile": profile.to_dict(), "patient": profile.to_patient().to_dict()})


def _audit_log(rest: str, path: Any) -> Iterator[Any]:
    from localqwen_medical.audit_log import AuditLog

    try:
        limit = int(rest.strip() or 10)
        if limit < 1:
            raise ValueError
    except ValueError:
        yield from _fail(f"/audit-log: expected a positive number of records, got {rest.strip()!r}")
        return
    records = AuditLog(path).read(limit)
    rows = [[r.get("time", ""), r.get("source", ""), r.get("round"), r.get("verdict", ""),
             "; ".join(f"{f['rule']}: {f['span']}" for f in r.get("findings", [])), (r.get("question") or "")[:80]]
            for r in records]
    yield events.Table(title="Audit log", columns=["time", "source", "round", "verdict", "findings", "question"], rows=rows)
    yield events.Done(summary=f"{len(records)} audit(s)", result={"records": len(records)})


# ---------------------------------------------------------------- async
async def achat(respond: Callable[[], Iterator[Any]], *, queue_size: int = 64) -> AsyncIterator[Any]:
    """The events of ``respond()`` (a sync turn, e.g. ``lambda: answer(request, ctx, config)``) as an
    async iterator: the turn runs in a worker thread and hands events over a queue, so the event
    loop stays free for other users. Closing the iterator early lets the worker finish its turn
    (the pipeline's own cancel token is the way to stop one mid-answer)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=queue_size)
    finished = object()

    def put(item: Any) -> bool:
        """Hand one item over; False when the awaiting side and its loop are gone."""
        try:
            asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()
        except RuntimeError:  # the event loop closed: nobody is listening any more
            return False
        return True

    def work() -> None:
        try:
            for event in respond():
                if not put(event):
                    return
        except BaseException as exc:  # handed to the awaiting side, which re-raises it
            put(exc)
            return
        put(finished)

    thread = threading.Thread(target=work, name="medical-achat", daemon=True)
    thread.start()
    while True:
        item = await queue.get()
        if item is finished:
            break
        if isinstance(item, BaseException):
            raise item
        yield item
