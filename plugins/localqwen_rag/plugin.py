"""Multi-agent RAG over your documents: knowledge bases, hybrid search and a team of agents
(Planner, Manager, Knowledge, Responder, Reviewer) whose shape a meta-router picks per question."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from localqwen.atomic import atomic_write_text
from localqwen.plugin_api import Context, Form, Plugin, Requirements, Widget, action, events, field
from localqwen.plugin_api.extensions import Extensions


class RagConfig(BaseModel):
    """``[plugins.rag]`` settings."""

    allowed_roots: list[str] = []  # folders documents may come from; empty = home, uploads and cwd
    model: str = ""  # text model for the agents; empty = the app's default
    vision_model: str = ""  # for questions with an image; empty = the app's default vision model
    router_model: str = ""  # a fine-tuned meta-router; empty = rules
    reranker: str = ""  # cross-encoder folder or hub id used when rerank is on
    embedding_model: str = ""  # for new knowledge bases; empty = bundled all-MiniLM-L6-v2
    max_file_mb: int = 100
    min_similarity: float = 0.3


class AskForm(Form):
    question: str = field(label="Question", widget=Widget.TEXTAREA, placeholder="Ask about your documents")
    knowledge_base: str = field("default", label="Knowledge base")
    use_kb: bool = field(True, label="Use the knowledge base", help="Off: answer without retrieval")
    image: Path | None = field(None, label="Image", widget=Widget.IMAGE, help="Optional; goes to the vision model")
    topology: Literal["auto", "single", "centralized", "decentralized"] = field(
        "auto", label="Topology", help="auto lets the meta-router choose")
    session: str = field("default", label="Session", help="Conversation the turn belongs to (for the report tool)")
    k: int = field(5, label="Passages", ge=1, le=20, advanced=True)
    rerank: bool = field(False, label="Rerank with a cross-encoder", advanced=True)
    model: str = field("", label="Text model", advanced=True)
    vision_model: str = field("", label="Vision model", advanced=True)
    router_model: str = field("", label="Router model", advanced=True, help="Fine-tuned meta-router; empty = rules")
    max_new_tokens: int = field(256, label="Max new tokens", ge=16, le=4096, advanced=True)
    tools: bool = field(True, label="Allow the save_session_summary tool", advanced=True)


class AddDocumentsForm(Form):
    paths: list[str] = field(label="Files or folders", widget=Widget.FOLDER,
                             help=".txt .md .pdf .docx .html; folders are walked")
    knowledge_base: str = field("default", label="Knowledge base")


class ManageForm(Form):
    operation: Literal["list", "create", "rename", "delete", "files", "remove-files", "rebuild"] = field(
        "list", label="Operation")
    name: str = field("", label="Knowledge base")
    new_name: str = field("", label="New name", help="For rename")
    paths: list[str] = field(default_factory=list, label="Files", help="For remove-files")


class SearchForm(Form):
    query: str = field(label="Query")
    knowledge_base: str = field("default", label="Knowledge base")
    k: int = field(5, label="Results", ge=1, le=50)
    mode: Literal["hybrid", "bm25", "dense"] = field("hybrid", label="Mode")
    rerank: bool = field(False, label="Rerank", advanced=True)


class ExportForm(Form):
    out_dir: str = field("", label="Output folder", widget=Widget.FOLDER, help="Empty = the plugin's data folder")


class RagPlugin(Plugin):
    id = "rag"
    title = "Documents and multi-agent RAG"
    description = "Ask questions over your documents with cited answers; a router picks the agent team."
    requirements = Requirements(task="text")
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

    def _kb(self, ctx: Context, name: str, *, create: bool = False):
        manager = self._manager(ctx)
        if create:
            config = self._config(ctx)
            return manager.get_or_create(name, embedding_model=config.embedding_model or None)
        return manager.get(name)

    # ------------------------------------------------------------ actions
    @action(form=AskForm, title="Ask")
    def ask(self, form: AskForm, ctx: Context):
        """Answer a question with the agent team, citing the knowledge base."""
        from localqwen.retrieval.knowledge_base import KnowledgeBaseError
        from localqwen_rag.agents.knowledge import KnowledgeSettings
        from localqwen_rag.agents.llm import LLM
        from localqwen_rag.pipeline import PipelineDeps, Question, run_question
        from localqwen_rag.trajectory import TrajectoryLog

        config = self._config(ctx)
        kb = None
        if form.use_kb:
            try:
                kb = self._kb(ctx, form.knowledge_base)
            except KnowledgeBaseError as exc:
                yield events.Warning(message=f"{exc}; answering without documents")
        image = str(form.image) if form.image else None
        if image and not Path(image).is_file():
            yield events.Error(message=f"image not found: {image}", field="image")
            return

        rerank: bool | str = False
        if form.rerank:
            rerank = config.reranker or False
            if not rerank:
                yield events.Warning(message="rerank is on but no cross-encoder is configured "
                                             "([plugins.rag] reranker); searching without it")

        def llm_for(model: str, task: str) -> LLM:
            engine = ctx.engine(model or None, task=task)
            return LLM(engine, max_new_tokens=form.max_new_tokens, cancel=ctx.cancel)

        text_llm = llm_for(form.model or config.model, "text")
        router_name = form.router_model or config.router_model
        session_file = ctx.data_dir / "sessions" / f"{_slug(form.session)}.json"
        session = json.loads(session_file.read_text(encoding="utf-8")) if session_file.exists() else {"turns": []}
        history = []
        for turn in session.get("turns", [])[-3:]:
            history += [{"role": "user", "content": turn["question"]},
                        {"role": "assistant", "content": turn.get("answer", "")}]
        deps = PipelineDeps(
            llm=text_llm,
            vision_llm=lambda: llm_for(form.vision_model or config.vision_model, "vision"),
            kb=kb,
            knowledge=KnowledgeSettings(k=form.k, rerank=rerank, min_similarity=config.min_similarity),
            log=TrajectoryLog(ctx.data_dir / "trajectories"),
            reports_dir=ctx.outputs_dir / "reports",
            session=session,
            router=llm_for(router_name, "text") if router_name else None,
            tools_enabled=form.tools,
        )
        try:
            yield from run_question(Question(form.question, use_kb=form.use_kb, image=image, topology=form.topology,
                                             history=history), deps)
        finally:
            atomic_write_text(session_file, json.dumps(session, ensure_ascii=False, indent=1))

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
        hits = self._kb(ctx, form.knowledge_base).search(form.query, k=form.k, mode=form.mode,
                                                          rerank=(config.reranker or True) if form.rerank else False)
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


def _slug(text: str) -> str:
    return re.sub(r"[^\w\-]+", "-", text.strip(), flags=re.UNICODE).strip("-")[:64] or "default"


__all__ = ["RagPlugin"]
