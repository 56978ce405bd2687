"""Which models this server offers: the configured default model, every plugin chat as
``localqwen/<plugin id>``, and the retrieval embedder.

The default model is what the plain chat plugin would load (``[plugins.chat] model``, else the
app's default text model), called directly so that OpenAI tools and sampling settings reach it.
A plugin model runs the plugin's ``@chat`` responder. Generations queue per engine: the default
model and every plugin chat without a ``model`` setting of its own share the default engine's queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localqwen.app import Workbench

PLUGIN_PREFIX = "localqwen/"


@dataclass(frozen=True)
class ServedModel:
    id: str
    kind: str  # "model" (the engine itself), "plugin" (a plugin's chat) or "embedding"
    target: str  # the model to load, the plugin id or the embedding model
    queue: str  # which engine queue its generations wait in
    title: str = ""

    def listing(self, created: int) -> dict[str, Any]:
        entry = {"id": self.id, "object": "model", "created": created, "owned_by": "localqwen",
                 "localqwen_kind": self.kind}
        if self.title:
            entry["localqwen_title"] = self.title
        return entry


def default_chat_model(bench: Workbench) -> str:
    from localqwen.runtime.model_manager import default_model

    return str(bench.config.plugin_section("chat").get("model") or default_model(bench.config, "text"))


def plugin_queue(bench: Workbench, plugin_id: str) -> str:
    """The engine queue a plugin's work waits in: its own ``model`` setting's engine, else the default's."""
    own = bench.config.plugin_section(plugin_id).get("model") or default_chat_model(bench)
    return f"engine:{own}"


def embedder_queue() -> str:
    from localqwen.retrieval.embeddings import DEFAULT_EMBEDDING_MODEL

    return f"embedder:{DEFAULT_EMBEDDING_MODEL}"


def served_models(bench: Workbench) -> list[ServedModel]:
    from localqwen.retrieval.embeddings import DEFAULT_EMBEDDING_MODEL

    default = default_chat_model(bench)
    models = [ServedModel(default, "model", default, f"engine:{default}", "default model")]
    for plugin in bench.conversations.plugins():
        models.append(ServedModel(PLUGIN_PREFIX + plugin.id, "plugin", plugin.id, plugin_queue(bench, plugin.id),
                                  plugin.title))
    models.append(ServedModel(DEFAULT_EMBEDDING_MODEL, "embedding", DEFAULT_EMBEDDING_MODEL, embedder_queue(),
                              "retrieval embedder"))
    return models


def find_model(models: list[ServedModel], name: Any, kind: str) -> ServedModel:
    """The served model ``name`` usable as ``kind`` ("chat" or "embedding"); 404 naming the offered ones."""
    from localqwen.server.errors import ApiError

    for model in models:
        if model.id == name and (model.kind == kind or (kind == "chat" and model.kind in ("model", "plugin"))):
            return model
    offered = ", ".join(m.id for m in models if (m.kind == "embedding") == (kind == "embedding"))
    raise ApiError(404, f"this server does not offer the model {name!r} for this route; it offers {offered}",
                   param="model", code="model_not_found")
