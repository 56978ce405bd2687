"""Which MCP tools this server offers: every plugin action, plus knowledge-base search.

An action's tool takes the action's Form as its input schema (the same pydantic model the CLI,
TUI and web forms are generated from), so a client validates arguments exactly as LocalQwen will.
Tool names are ``<plugin>_<action>`` with dashes as underscores (``rag_add_documents``,
``memory_search``): only letters, digits and ``_``, which every MCP host and every LLM tool-calling
API accepts (dots and dashes are refused by some). Knowledge-base search gets its own tool,
``knowledge_base_search``, because the rag plugin's search action shows a table of shortened
texts for people while a model wants the full chunks with their sources, and because it works
whether or not the rag plugin is installed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from localqwen.plugin_api.forms import Form, field, parse_form
from localqwen.vocabulary import events as ev

if TYPE_CHECKING:
    from localqwen.app import Workbench
    from localqwen.vocabulary.cancel import CancelToken

KNOWLEDGE_BASE_SEARCH = "knowledge_base_search"


class KnowledgeBaseSearch(Form):
    query: str = field(label="Query", help="What to look for, in words.", min_length=1)
    knowledge_base: str = field("default", label="Knowledge base",
                                help="Its name (the rag plugin's knowledge_bases tool lists them).")
    k: int = field(5, label="Results", ge=1, le=50)
    mode: Literal["hybrid", "bm25", "dense"] = field("hybrid", label="Mode",
                                                     help="hybrid = keywords and meaning together")


@dataclass(frozen=True)
class McpTool:
    name: str
    title: str
    description: str
    form: type[Form]
    plugin_id: str = ""  # empty for LocalQwen's own tools
    action_id: str = ""

    def input_schema(self) -> dict[str, Any]:
        return self.form.model_json_schema()

    def queue(self, bench: Workbench) -> str:
        """The engine queue its call waits in, shared with the API's generations (see queues.py).

        A plugin action may load and run the plugin's model, so every action of a plugin waits in
        that model's queue, even one that turns out not to generate: the server cannot know in
        advance, and two generations at once on one engine is what the queue exists to prevent.
        """
        from localqwen.server.catalog import embedder_queue, plugin_queue

        return plugin_queue(bench, self.plugin_id) if self.plugin_id else embedder_queue()

    def events(self, bench: Workbench, arguments: dict[str, Any], cancel: CancelToken) -> Iterator[Any]:
        """Validate ``arguments`` (raising :class:`FormError` before any work) and return the event stream."""
        form = parse_form(self.form, arguments)
        if self.plugin_id:
            return bench.run(self.plugin_id, self.action_id, form, cancel)
        from localqwen.vocabulary.finish import finish_once

        return finish_once(search_knowledge_base(bench, form), cancel)  # type: ignore[arg-type]


def tool_name(plugin_id: str, action_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{plugin_id}_{action_id}")


def tool_catalog(bench: Workbench) -> dict[str, McpTool]:
    """Every action of every plugin that loads (broken plugins are skipped, as everywhere), by name."""
    tools: dict[str, McpTool] = {}
    for plugin in bench.host.load_all():
        for action in plugin.actions():
            name = tool_name(plugin.id, action.id)
            if name in tools:  # e.g. plugin "a-b" action "c" and plugin "a" action "b-c"
                name = f"{name}_{len(tools)}"
            tools[name] = McpTool(name=name, title=f"{plugin.title} › {action.title}",
                                  description=action.description or action.title, form=action.form,
                                  plugin_id=plugin.id, action_id=action.id)
    tools[KNOWLEDGE_BASE_SEARCH] = McpTool(
        name=KNOWLEDGE_BASE_SEARCH, title="Search a knowledge base",
        description="Search one of LocalQwen's document knowledge bases (keywords and embeddings); "
                    "returns the best chunks in full with their file, page and heading.",
        form=KnowledgeBaseSearch)
    return tools


def search_knowledge_base(bench: Workbench, form: KnowledgeBaseSearch) -> Iterator[Any]:
    from localqwen.retrieval.knowledge_base import KnowledgeBaseError

    try:
        kb = bench.services.retrieval.get(form.knowledge_base)
    except KnowledgeBaseError as exc:  # its message names the knowledge bases there are
        message = str(exc)
        yield ev.Error(message=message, field="knowledge_base")
        yield ev.Done(status="failed", summary=message)
        return
    hits = kb.search(form.query, k=form.k, mode=form.mode)
    for number, hit in enumerate(hits, start=1):
        yield ev.TextDelta(text=f"[{number}] {hit.citation()} (score {hit.score:.4f})\n{hit.text}\n\n")
    yield ev.Done(summary=f"{len(hits)} result(s) in {form.knowledge_base!r}", result={"hits": [
        {"text": h.text, "score": h.score, "source": h.source, "page": h.page, "heading": h.heading,
         "chunk_id": h.chunk_id} for h in hits]})
