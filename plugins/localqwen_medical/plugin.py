"""The medical plugin: a ``@chat`` responder (route -> rewrite -> retrieve -> draft with citations
-> safety audit -> refine or block) and actions for the CLI and the web UI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from localqwen.plugin_api import Context, Form, Plugin, Requirements, Widget, action, events, field
from localqwen.plugin_api.chat import ChatRequest, ask_in_session, chat, chat_panel
from localqwen_medical.audit_action import AuditForm
from localqwen_medical.settings import MedicalConfig


class AskForm(Form):
    question: str = field(label="Question", widget=Widget.TEXTAREA, placeholder="Ask a health question")
    knowledge_base: str = field("", label="Knowledge base", help="Empty = the configured default ([plugins.medical])")
    patient: Path | None = field(None, label="Patient profile (JSON)", widget=Widget.FILE,
                                 help='{"allergies": [], "medications": [], "conditions": [], "age": null, '
                                      '"sex": null, "pregnant": null}')
    session: str = field("default", label="Session", help="Conversation the turn belongs to (kept in the chat store)")
    rules_only: bool = field(False, label="Rules only", help="No model: rules route, extractive draft, rule audit")


class EvaluateForm(Form):
    suite: Literal["router", "grounding", "safety", "profile"] = field("router", label="Suite")
    limit: int = field(0, label="Items", ge=0, help="0 = all (grounding: PubMedQA questions)")
    embed: bool = field(False, label="Embed passages (MiniLM)", advanced=True,
                        help="grounding: hybrid search with MiniLM vectors instead of BM25 (minutes on a CPU)")
    with_model: bool = field(False, label="Use the configured model", advanced=True,
                             help="router, safety, profile: ask the configured model too (rules otherwise)")
    data_dir: str = field("", label="Data folder", advanced=True, help="Empty = ../shared/data next to the repository")


class Medical(Plugin):
    id = "medical"
    title = "Medical assistant"
    description = ("Medical questions answered from your knowledge base with checked citations, "
                   "a safety audit against the patient profile, and a clinician reminder.")
    # The default 2B model as GGUF Q4_K_M (~1.9 GB) plus the bundled MiniLM embedder.
    requirements = Requirements(task="text", min_memory_gb=2.5)
    config_model = MedicalConfig

    def _config(self, ctx: Context) -> MedicalConfig:
        return MedicalConfig.model_validate(ctx.settings or {})

    @chat
    def respond(self, request: ChatRequest, ctx: Context) -> Iterator[Any]:
        """Answer the new message (commands: /settings /set /profile /audit-log /help)."""
        from localqwen_medical.chat import answer

        yield from answer(request, ctx, self._config(ctx))

    @chat_panel
    def panel(self, metadata: dict[str, Any], ctx: Context) -> list[events.Table]:
        """Beside the chat: the patient profile the auditor checks against (each fact with the turn
        it came from; edit it with /profile), the session's choices and the summary memory."""
        from localqwen_medical.profile import Profile
        from localqwen_medical.settings import session_choices

        profile = Profile.from_metadata(metadata)
        tables = [events.Table(title="Patient profile (/profile to edit)", columns=["field", "value"],
                               rows=[line.split(": ", 1) for line in profile.lines()])]
        try:
            choices = session_choices(metadata)
            knowledge = choices.knowledge_base if choices.use_kb else "off"
            tables.append(events.Table(title="This session (/set NAME VALUE)", columns=["setting", "value"],
                                       rows=[["knowledge base", knowledge], ["passages", choices.k],
                                             ["rules only", choices.rules_only]]))
        except ValueError as exc:  # a bad stored value: say it where the user looks
            tables.append(events.Table(title="This session", columns=["problem"], rows=[[str(exc)]]))
        summary = metadata.get("summary") or {}
        if summary.get("text"):
            tables.append(events.Table(title="Summary of earlier turns", columns=["summary"],
                                       rows=[[summary["text"]]]))
        return tables

    def register(self, extensions) -> None:
        """The medical-sft / medical-dpo trainer data sources (med-profile's training_data.py)."""
        from localqwen_medical.training_data import register

        register(extensions)

    @action(form=AskForm, title="Ask")
    def ask(self, form: AskForm, ctx: Context):
        """Answer one health question (a turn of the named chat session): routed, grounded, audited."""
        from localqwen_medical.case import CaseError, Patient
        from localqwen_medical.chat import answer

        metadata: dict[str, Any] = {"rules_only": form.rules_only}
        if form.knowledge_base:
            metadata["knowledge_base"] = form.knowledge_base
        if form.patient is not None:
            import json

            try:
                data = json.loads(Path(form.patient).expanduser().read_text(encoding="utf-8"))
                metadata["patient"] = Patient.from_dict(data).to_dict()
            except FileNotFoundError:
                problem = f"no such patient file: {form.patient}"
            except (json.JSONDecodeError, CaseError, UnicodeDecodeError) as exc:
                problem = f"{form.patient}: {exc}"
            else:
                problem = ""
            if problem:
                yield events.Error(message=problem, field="patient")
                yield events.Done(status="failed", summary=problem)
                return
        chats = ctx.chats
        found = [info.id for info in chats.sessions(limit=100_000) if info.metadata.get("name") == form.session]
        session_id = found[0] if found else chats.create_session(metadata={"name": form.session})
        config = self._config(ctx)
        yield from ask_in_session(chats, session_id, {"role": "user", "content": form.question},
                                  lambda request: answer(request, ctx, config), session_name=form.session,
                                  metadata=metadata)

    @action(form=AuditForm, title="Audit")
    def audit(self, form: AuditForm, ctx: Context):
        """Audit a draft answer (or a JSONL file of cases): the rules, then the model as critic."""
        from localqwen_medical.audit_action import run_audit

        yield from run_audit(form, ctx)

    @action(form=EvaluateForm, title="Evaluate")
    def evaluate(self, form: EvaluateForm, ctx: Context):
        """Run an evaluation suite: router (macro-F1), grounding (PubMedQA citations), safety, profile."""
        if form.suite == "router":
            from localqwen_medical.chat import ModelLLM
            from localqwen_medical.router_suite import evaluate_router, load_suite

            items = load_suite(form.data_dir or None)
            if form.limit:
                items = _spread(items, form.limit)
            llm = ModelLLM(ctx.engine(None, task="text"), cancel=ctx.cancel) if form.with_model else None
            report = evaluate_router(items, llm, progress=None)
            yield events.Table(title="Router", columns=["intent", "precision", "recall", "F1", "support"],
                               rows=[[k, v["precision"], v["recall"], v["f1"], v["support"]]
                                     for k, v in report["per_label"].items()])
            yield events.Done(summary=f"router macro-F1 {report['macro_f1']}", result=report)
        elif form.suite == "grounding":
            from localqwen_medical.grounding_suite import build_index, evaluate_grounding, load_items

            items = load_items(form.data_dir or None)
            index = build_index(items, embed=form.embed, vectors_cache=ctx.data_dir / "pubmedqa_minilm.npy")
            report = evaluate_grounding(items, index, limit=form.limit or None)
            yield events.Table(title="Grounding (PubMedQA test)", columns=["measure", "value"],
                               rows=[[k, v] for k, v in report.items()])
            yield events.Done(summary=f"citations valid {report['citations_valid']}, precision "
                                      f"{report['citation_precision']}", result=report)
        elif form.suite == "profile":
            from localqwen_medical.profile_eval import run_profile_suite

            engine = ctx.engine(None, task="text") if form.with_model else None
            yield from run_profile_suite(data_dir=form.data_dir or None, engine=engine)
        else:
            from localqwen_medical.safety_eval import run_safety_suite

            yield from run_safety_suite(ctx=ctx, with_model=form.with_model, limit=form.limit)


def _spread(items: list, limit: int) -> list:
    """``limit`` items taken evenly across the suite, so every label is represented."""
    step = max(1, len(items) // limit)
    return items[::step][:limit]
