"""The medical plugin: a ``@chat`` responder (route -> rewrite -> retrieve -> draft with citations
-> safety audit -> refine or block) and actions for the CLI and the web UI."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from localqwen.plugin_api import Context, Plugin, Requirements
from localqwen.plugin_api.chat import ChatRequest, chat
from localqwen_medical.settings import MedicalConfig


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
