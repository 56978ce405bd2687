"""What the medical plugin can be told: its ``[plugins.medical]`` config section, and the choices
each chat session keeps in its metadata (``/set NAME VALUE``; the ``ask`` form carries the same)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from localqwen.plugin_api import Form, field


class MedicalConfig(BaseModel):
    """``[plugins.medical]`` settings."""

    model: str = ""  # text model for routing, rewriting, drafting and the critic; empty = the app's default
    knowledge_base: str = "medical"  # default knowledge base of new sessions
    min_relevance: float = 0.5  # word coverage a passage needs when the search gave no embedding cosine
    min_similarity: float = 0.6  # embedding cosine a passage needs (measured on PubMedQA; see evidence.py)
    max_refinements: int = 2  # audit -> refine rounds before a still-unsafe draft is blocked


class SessionChoices(Form):
    """A conversation's choices, kept in its session metadata between turns."""

    knowledge_base: str = field("medical", label="Knowledge base")
    use_kb: bool = field(True, label="Use the knowledge base", help="Off: answers carry no evidence")
    k: int = field(5, label="Passages", ge=1, le=20, advanced=True)
    model: str = field("", label="Text model", advanced=True)
    max_new_tokens: int = field(384, label="Max new tokens", ge=16, le=4096, advanced=True)
    rules_only: bool = field(False, label="Rules only (no model for routing, rewriting, critic)", advanced=True)


def session_choices(metadata: dict[str, Any]) -> SessionChoices:
    """The choices stored in a session's metadata (missing ones take their defaults).

    Raises ``ValueError`` naming the setting when a stored value is not valid."""
    values = {name: metadata[name] for name in SessionChoices.model_fields if name in metadata}
    try:
        return SessionChoices.model_validate(values)
    except ValidationError as exc:
        raise ValueError("; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
                                   for e in exc.errors())) from None
