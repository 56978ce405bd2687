"""Multi-agent RAG over your documents: knowledge bases, hybrid search and a team of agents
(Planner, Manager, Knowledge, Responder, Reviewer) whose shape a meta-router picks per question.

Asking is a chat (``@chat``; sessions in the one chat store, see chat.py); the ``ask`` action
runs the same turn for the CLI, in the session its ``--session`` names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from localqwen.plugin_api import Context, Form, Plugin, Requirements, Widget, action, events, field
from localqwen.plugin_api.chat import ChatRequest, ImageRejected, ask_in_session, attach_image, chat
from localqwen.plugin_api.extensions import Extensions
from localqwen_rag.settings import RagConfig, SessionChoices


class AskQuestion(Form):
    question: str = field(label="Question", widget=Widget.TEXTAREA, placeholder="Ask about your documents")
    image: Path | None = field(None, label="Image", widget=Widget.IMAGE, help="Optional; goes to the vision model")
    session: str = field("default", label="Session",
                         help="Conversation the turn belongs to; its choices and history are kept in the chat store")


class AskForm(SessionChoices, AskQuestion):
    """The question first, then the session's choices (pydantic orders fields base-most first)."""


class AddDocumentsForm(Form):
    paths: list[str] = field(label="Files or folders", widget=Widget.FOLDER,
                             help=".txt .md .pdf .docx .html; folders are walked")
    knowledge_base: str = field("default", label="Knowledge base", options_from="knowledge_bases")


class ManageForm(Form):
    operation: Literal["list", "create", "rename", "delete", "files", "remove-files", "rebuild"] = field(
        "list", label="Operation")
    name: str = field("", label="Knowledge base")
    new_name: str = field("", label="New name", help="For rename")
    paths: list[str] = field(default_factory=list, label="Files", help="For remove-files")


class SearchForm(Form):
    query: str = field(label="Query")
    knowledge_base: str = field("default", label="Knowledge base", options_from="knowledge_bases")
    k: int = field(5, label="Results", ge=1, le=50)
    mode: Literal["hybrid", "bm25", "dense"] = field("hybrid", label="Mode")
    rerank: bool = field(False, label="Rerank", advanced=True)


class ExportForm(Form):
    out_dir: str = field("", label="Output folder", widget=Widget.FOLDER, help="Empty = the plugin's data folder")


class RagPlugin(Plugin):
    id = "rag"
    title = "Documents and multi-agent RAG"
    description = "Ask questions over your documents with cited answers; a router picks the agent team."
    # The default 2B model as GGUF Q4_K_M (~1.9 GB by the device plan) and the bundled embedder;
    # a reranker, when switched on, adds ~1 GB.
    requirements = Requirements(task="text", min_memory_gb=2.5)
    config_model = RagConfig

    def register(self, extensions: Extensions) -> None:
        """The router's training data as trainer data sources (``rag-router-sft``, ``rag-router-dpo``)."""
        from localqwen_rag.data_sources import register

        register(extensions)

    # ------------------------------------------------------------ helpers
    def _config(self, ctx: Context) -> RagConfig:
        return RagConfig.model_validate(ctx.settings or {})

    def _manager(self, ctx: Context):
        """The app-wide manager (its search snapshots stay warm between questions)."""
        return ctx.retrieval

    def _ingest_options(self, ctx: Context) -> dict:
        config = self._config(ctx)
        roots = [Path(r).expanduser() for r in config.allowed_roots] or [
            Path.home(), ctx.paths.uploads_dir, Path.cwd()]
        return {"allowed_roots": roots, "max_file_bytes": config.max_file_mb * 2**20}

    def field_options(self, source: str, ctx: Context) -> list[Any]:
        """The knowledge bases that exist, for the forms' "Knowledge base" lists ("default" is
        always offered: adding documents to it creates it)."""
        if source != "knowledge_bases":
            return []
        names = [info.name for info in self._manager(ctx).list()]
        return names if "default" in names else ["default", *names]

    def _kb(self, ctx: Context, name: str, *, create: bool = False):
        manager = self._manager(ctx)
        if create:
            config = self._config(ctx)
            return manager.get_or_create(name, embedding_model=config.embedding_model or None)
        return manager.get(name)

    # ------------------------------------------------------------ actions
    @chat
    def respond(self, request: ChatRequest, ctx: Context) -> Iterator[Any]:
        """Answer the new message with the agent team, citing the session's knowledge base."""
        from localqwen_rag.chat import answer
        from localqwen_rag.sessions import import_legacy_sessions

        yield from import_legacy_sessions(ctx.chats, ctx.data_dir)
        yield from answer(request, ctx, self._config(ctx))

    @action(form=AskForm, title="Ask")
    def ask(self, form: AskForm, ctx: Context):
        """Answer a question with the agent team, citing the knowledge base (one turn of a chat session)."""
        from localqwen_rag import sessions
        from localqwen_rag.chat import answer

        yield from sessions.import_legacy_sessions(ctx.chats, ctx.data_dir)
        session_id = sessions.named_session(ctx.chats, form.session)
        content: str | list[dict[str, Any]] = form.question
        uploads: list[str] = []
        if form.image:
            try:
                uploads.append(attach_image(form.image, ctx.paths.uploads_dir, session_id))
            except ImageRejected as exc:
                yield events.Error(message=str(exc), field="image")
                return
            content = [{"type": "image", "image": uploads[0]}, {"type": "text", "text": form.question}]
        config = self._config(ctx)
        choices = form.model_dump(include=set(SessionChoices.model_fields))  # this turn's, kept by the session
        # The ask action is not a chat view, so it stores the turn the way Conversations does.
        for event in ask_in_session(ctx.chats, session_id, {"role": "user", "content": content},
                                    lambda request: answer(request, ctx, config), session_name=form.session,
                                    metadata=choices, uploads=uploads):
            if isinstance(event, events.Done) and event.result.get("outcome") == "failure":
                # A script running `localqwen run rag ask` must see an ungrounded answer: exit 1, reason shown.
                event = event.model_copy(update={"status": "failed"})
            yield event

    @action(form=AddDocumentsForm, title="Add documents")
    def add_documents(self, form: AddDocumentsForm, ctx: Context):
        """Add files or folders to a knowledge base (created if missing)."""
        kb = self._kb(ctx, form.knowledge_base, create=True)
        yield from kb.add_paths(form.paths, ctx.cancel, **self._ingest_options(ctx))

    @action(form=ManageForm, title="Knowledge bases")
    def knowledge_bases(self, form: ManageForm, ctx: Context):
        """List, create, rename, delete or rebuild knowledge bases; list or remove their files."""
        from localqwen.retrieval.knowledge_base import KnowledgeBaseError

        manager = self._manager(ctx)
        try:
            if form.operation == "create":
                manager.create(form.name, embedding_model=self._config(ctx).embedding_model or None)
            elif form.operation == "rename":
                manager.rename(form.name, form.new_name)
            elif form.operation == "delete":
                manager.delete(form.name)
            elif form.operation == "remove-files":
                removed = manager.get(form.name).remove_paths(form.paths)
                yield events.Log(message=f"removed {len(removed)} file(s)")
            elif form.operation == "rebuild":
                yield from manager.get(form.name).rebuild(ctx.cancel)
                return
            elif form.operation == "files":
                files = manager.get(form.name).files()
                yield events.Table(title=f"Files in {form.name}", columns=["path", "chunks", "size", "encoding"],
                                   rows=[[f.path, f.chunks, f.size, f.encoding or ""] for f in files])
                yield events.Done(summary=f"{len(files)} file(s)", result={"files": [f.path for f in files]})
                return
        except KnowledgeBaseError as exc:
            yield events.Error(message=str(exc), field="name")
            yield events.Done(status="failed", summary=str(exc))
            return
        infos = manager.list()
        yield events.Table(title="Knowledge bases", columns=["name", "files", "chunks", "embedding model"],
                           rows=[[i.name, i.files, i.chunks, i.embedding_model] for i in infos])
        yield events.Done(summary=f"{len(infos)} knowledge base(s)", result={"knowledge_bases": [i.name for i in infos]})

    @action(form=SearchForm, title="Search")
    def search(self, form: SearchForm, ctx: Context):
        """Search a knowledge base without the agents (BM25 + vectors, optional rerank)."""
        config = self._config(ctx)
        if form.rerank and not config.reranker:
            message = ("rerank is on but no cross-encoder is configured: set [plugins.rag] reranker to a folder "
                       "or hub id (e.g. BAAI/bge-reranker-base)")
            yield events.Error(message=message, field="rerank")
            yield events.Done(status="failed", summary=message)
            return
        # The plugin names its cross-encoder itself; the retrieval core reads no plugin's settings.
        hits = self._kb(ctx, form.knowledge_base).search(form.query, k=form.k, mode=form.mode,
                                                          rerank=config.reranker if form.rerank else False)
        yield events.Table(title=f"Results for: {form.query}", columns=["#", "score", "source", "page", "heading", "text"],
                           rows=[[n, round(h.score, 4), h.source, h.page or "", h.heading, h.text[:200]]
                                 for n, h in enumerate(hits, start=1)])
        yield events.Done(summary=f"{len(hits)} result(s)", result={"hits": [h.chunk_id for h in hits]})

    @action(form=ExportForm, title="Export router data")
    def export_router_data(self, form: ExportForm, ctx: Context):
        """Turn trajectory logs into router SFT and DPO files for the trainer."""
        from localqwen_rag.trajectory import TrajectoryLog, export_router_data

        records = TrajectoryLog(ctx.data_dir / "trajectories").read()
        out_dir = Path(form.out_dir).expanduser() if form.out_dir else ctx.data_dir / "router_data"
        result = export_router_data(records, out_dir)
        yield events.FileWritten(path=result["sft"], description=f"router SFT ({result['sft_rows']} rows)")
        yield events.FileWritten(path=result["dpo"], description=f"router DPO ({result['dpo_rows']} pairs)")
        yield events.Done(summary=f"{result['sft_rows']} SFT rows, {result['dpo_rows']} DPO pairs from "
                          f"{result['trajectories']} trajectories", result=result)


__all__ = ["RagPlugin"]
