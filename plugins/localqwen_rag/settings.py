"""What the RAG plugin can be told: its ``[plugins.rag]`` config section, and the choices each
chat session keeps in its metadata (the ``ask`` form carries the same fields)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from localqwen.plugin_api import Form, field


class RagConfig(BaseModel):
    """``[plugins.rag]`` settings."""

    allowed_roots: list[str] = []  # folders documents may come from; empty = home, uploads and cwd
    model: str = ""  # text model for the agents; empty = the app's default
    vision_model: str = ""  # for questions with an image; empty = the app's default vision model
    router_model: str = ""  # a fine-tuned meta-router; empty = rules
    reranker: str = ""  # cross-encoder folder or hub id used when rerank is on
    embedding_model: str = ""  # for new knowledge bases; empty = bundled all-MiniLM-L6-v2
    max_file_mb: int = Field(100, ge=1)  # 0 or less would refuse every file (or, before, accept any)
    # A passage is relevant at this embedding cosine; when none is, the question is refused as "not
    # in your documents" (measured in agents/knowledge.py).
    min_similarity: float = 0.3


class SessionChoices(Form):
    """A conversation's choices, kept in its session metadata between turns (``/set NAME VALUE``)."""

    knowledge_base: str = field("default", label="Knowledge base", options_from="knowledge_bases")
    use_kb: bool = field(True, label="Use the knowledge base", help="Off: answer without retrieval")
    topology: Literal["auto", "single", "centralized", "decentralized"] = field(
        "auto", label="Topology", help="auto lets the meta-router choose")
    k: int = field(5, label="Passages", ge=1, le=20, advanced=True)
    rerank: bool = field(False, label="Rerank with a cross-encoder", advanced=True)
    model: str = field("", label="Text model", advanced=True)
    vision_model: str = field("", label="Vision model", advanced=True)
    router_model: str = field("", label="Router model", advanced=True, help="Fine-tuned meta-router; empty = rules")
    max_new_tokens: int = field(96, label="Max new tokens", ge=16, le=4096, advanced=True)  # short answers: on a CPU the reply is the wait
    tools: bool = field(True, label="Allow the save_session_summary tool", advanced=True)


def session_choices(metadata: dict[str, Any]) -> SessionChoices:
    """The choices stored in a session's metadata (missing ones take their defaults).

    Raises ``ValueError`` naming the setting when a stored value is not valid."""
    values = {name: metadata[name] for name in SessionChoices.model_fields if name in metadata}
    try:
        return SessionChoices.model_validate(values)
    except ValidationError as exc:
        raise ValueError(describe_error(exc)) from None


def describe_error(exc: ValidationError) -> str:
    """One line per problem, each naming its setting (pydantic's own text is long)."""
    return "; ".join(f"{'.'.join(str(p) for p in error['loc']) or 'value'}: {error['msg']}" for error in exc.errors())
