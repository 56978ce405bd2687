"""One RAG chat turn: the agent team answers the new message with the session's history and choices.

The plugin's ``@chat`` responder and its ``ask`` action both come here, so the pipeline runs
through one path. A session's metadata (in the one chat store) holds its choices (see
``settings.SessionChoices``: knowledge base, topology, passages, rerank, models...) and ``turns``,
the pipeline's turn records (plan, manager decision, evidence, verdicts) that the report tool
writes out. A regenerated answer replaces its turn record: each record remembers the position of
its user message. From any chat view, ``/settings`` lists the choices and ``/set NAME VALUE``
changes one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from localqwen.plugin_api import ChatRequest, Context, events
from localqwen.plugin_api.chat import plain_history
from localqwen_rag.settings import RagConfig, SessionChoices, describe_error, session_choices

HISTORY_MESSAGES = 6  # earlier messages the agents see (three exchanges)
TURNS_KEPT = 50  # turn records a session keeps for its report
IMAGE_ONLY_QUESTION = "Describe this image."
# Every agent call repeats the question: a 126 KB one kept the CPU busy for 273 s (issue 16).
MAX_QUESTION_CHARS = 4000
COMMANDS = "/settings, /set NAME VALUE"


def answer(request: ChatRequest, ctx: Context, config: RagConfig) -> Iterator[Any]:
    """Yield the turn's events: a command's reply, or the pipeline's steps, answer, sources and ``Done``."""
    text = request.text.strip()
    if text.startswith("/"):
        yield from _command(text, request.metadata)
        return
    if len(text) > MAX_QUESTION_CHARS:
        message = (f"the question is {len(text):,} characters long; questions may be at most {MAX_QUESTION_CHARS:,}. "
                   "Put long material in a document and add it to the knowledge base instead.")
        yield events.Error(message=message, field="question")
        yield events.Done(status="failed", summary=message)
        return
    try:
        choices = session_choices(request.metadata)
    except ValueError as exc:
        message = f"this session's settings are not valid: {exc}. Fix them with /set NAME VALUE."
        yield events.Error(message=message)
        yield events.Done(status="failed", summary=message)
        return
    request.metadata.update(choices.model_dump())  # the session shows every choice it runs with
    yield from _ask(request, ctx, config, choices)


def _ask(request: ChatRequest, ctx: Context, config: RagConfig, choices: SessionChoices) -> Iterator[Any]:
    from localqwen.retrieval.knowledge_base import KnowledgeBaseError
    from localqwen_rag.agents.knowledge import KnowledgeSettings
    from localqwen_rag.agents.llm import LLM
    from localqwen_rag.pipeline import PipelineDeps, Question, run_question
    from localqwen_rag.trajectory import TrajectoryLog

    kb = None
    if choices.use_kb:
        try:
            kb = ctx.retrieval.get(choices.knowledge_base)
        except KnowledgeBaseError as exc:
            yield events.Warning(message=f"{exc}; answering without documents")
    images = request.images
    if len(images) > 1:
        yield events.Warning(message=f"{len(images)} images attached; only the first goes to the vision model")

    rerank: bool | str = False
    if choices.rerank:
        # The plugin names its cross-encoder itself; the retrieval core reads no plugin's settings.
        rerank = config.reranker or False
        if not rerank:
            yield events.Warning(message="rerank is on but no cross-encoder is configured "
                                         "([plugins.rag] reranker); searching without it")

    # The answer's length and temperature: the chat view's per-turn settings over the session's
    # max_new_tokens (greedy by default). They reach the Responder's streamed answer only; the
    # agents' internal structured calls keep their own lengths and greedy decoding (agents/llm.py).
    answer_settings = request.generation_settings(max_new_tokens=choices.max_new_tokens)

    def llm_for(model: str, task: str) -> LLM:
        from localqwen.retrieval.quiet import quiet_loading

        # An empty choice means the app's default for the task (ctx.engine(None) would mean this
        # plugin's `model` setting, which is the text model, also for images).
        with quiet_loading():  # the load's progress bars and library notes are not the user's business
            engine = ctx.engine(model or ctx.default_model(task), task=task)
        return LLM(engine, max_new_tokens=answer_settings.max_new_tokens, temperature=answer_settings.temperature,
                   cancel=ctx.cancel)

    text_model = choices.model or config.model
    router_model = choices.router_model or config.router_model
    position = len(request.history)  # where this turn's user message sits in the session
    turns = [turn for turn in request.metadata.get("turns", []) if turn.get("position", -1) < position]
    deps = PipelineDeps(
        llm=llm_for(text_model, "text"),
        vision_llm=lambda: llm_for(choices.vision_model or config.vision_model, "vision"),
        kb=kb,
        knowledge=KnowledgeSettings(k=choices.k, rerank=rerank, min_similarity=config.min_similarity),
        log=TrajectoryLog(ctx.data_dir / "trajectories"),
        reports_dir=ctx.outputs_dir / "reports",
        turns=turns,
        router=llm_for(router_model, "text") if router_model else None,
        tools_enabled=choices.tools,
    )
    question = Question(request.text.strip() or IMAGE_ONLY_QUESTION, use_kb=choices.use_kb,
                        image=images[0] if images else None, topology=choices.topology,
                        history=plain_history(request.history, keep=HISTORY_MESSAGES, image_note="(an image)"))
    earlier = len(turns)
    try:
        yield from run_question(question, deps)
    finally:
        for turn in turns[earlier:]:
            turn["position"] = position
        request.metadata["turns"] = turns[-TURNS_KEPT:]


def _command(text: str, metadata: dict[str, Any]) -> Iterator[Any]:
    name, _, rest = text[1:].partition(" ")
    if name not in ("settings", "set"):
        message = f"unknown command /{name}; the commands are {COMMANDS}"
        yield events.Error(message=message)
        yield events.Done(status="failed", summary=message)
        return
    if name == "set":
        key, _, value = rest.strip().partition(" ")
        if key not in SessionChoices.model_fields:
            message = f"/set: no setting named {key!r}; the settings are {', '.join(SessionChoices.model_fields)}"
            yield events.Error(message=message)
            yield events.Done(status="failed", summary=message)
            return
        stored = {field: metadata[field] for field in SessionChoices.model_fields if field in metadata}
        try:  # the other stored values are checked too, so a bad one is named (and can be set next)
            chosen = SessionChoices.model_validate({**stored, key: value.strip()})
        except ValidationError as exc:
            message = f"/set {key}: {describe_error(exc)}"
            yield events.Error(message=message)
            yield events.Done(status="failed", summary=message)
            return
        metadata.update(chosen.model_dump())
        yield events.TextDelta(text=f"{key} = {getattr(chosen, key)!r}")
        yield events.Done(summary=f"{key} set", result={"settings": chosen.model_dump()})
        return
    try:
        shown = session_choices(metadata).model_dump()
    except ValueError as exc:
        shown = {name: metadata.get(name) for name in SessionChoices.model_fields}
        yield events.Warning(message=f"some settings are not valid: {exc}")
    yield events.TextDelta(text="This conversation's settings (change one with /set NAME VALUE):\n"
                                + "\n".join(f"- {key} = {value!r}" for key, value in shown.items()))
    yield events.Done(summary="settings", result={"settings": shown})
