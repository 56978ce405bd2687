"""``POST /v1/rerank`` in the shape Jina, Cohere and the clients built for them use.

Request: ``{"model", "query", "documents": [str | {"text": str}], "top_n"?, "return_documents"?}``.
Answer: ``{"model", "results": [{"index", "relevance_score", "document"?: {"text"}}], "usage"}``,
best first; ``index`` points into the request's ``documents``. The scores are the cross-encoder's
raw outputs (the retrieval core's :class:`~localqwen.retrieval.rerank.Reranker`, loaded once
through the device manager), so they order documents but are not probabilities.

Which cross-encoders are served: the one configured for the RAG plugin (``[plugins.rag]
reranker``, a folder or hub id) and the catalog's reranker ids. A client cannot name any other
folder: loading a model folder may run code from it, so what may load is the server owner's choice.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from localqwen.server.errors import ApiError

if TYPE_CHECKING:
    from localqwen.app import Workbench

MAX_DOCUMENTS = 1000
MAX_DOCUMENT_CHARS = 100_000


def served_rerankers(bench: Workbench) -> list[str]:
    from localqwen.retrieval.rerank import RERANKER_CATALOG

    configured = str(bench.config.plugin_section("rag").get("reranker") or "")
    return [name for name in [configured, *RERANKER_CATALOG] if name]


def rerank_request(body: dict[str, Any], offered: list[str]) -> tuple[str, str, list[str], int, bool]:
    """``(model, query, texts, top_n, return_documents)`` from the body; :class:`ApiError` (400/404) when wrong."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, f"'model' is required: one of {', '.join(offered)}", param="model")
    if model not in offered:
        raise ApiError(404, f"this server does not offer the reranker {model!r}; it offers {', '.join(offered)} "
                            "(set [plugins.rag] reranker to serve another)", param="model", code="model_not_found")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ApiError(400, "'query' must be a non-empty string", param="query")
    documents = body.get("documents")
    if not isinstance(documents, list) or not documents:
        raise ApiError(400, "'documents' must be a non-empty list of strings or {\"text\": ...} objects",
                       param="documents")
    if len(documents) > MAX_DOCUMENTS:
        raise ApiError(400, f"at most {MAX_DOCUMENTS} documents per request, got {len(documents)}", param="documents")
    texts = []
    for number, document in enumerate(documents):
        text = document.get("text") if isinstance(document, dict) else document
        if not isinstance(text, str):
            raise ApiError(400, f"documents[{number}] must be a string or an object with a string 'text'",
                           param="documents")
        if len(text) > MAX_DOCUMENT_CHARS:
            raise ApiError(400, f"documents[{number}] has {len(text)} characters; at most {MAX_DOCUMENT_CHARS}",
                           param="documents")
        texts.append(text)
    top_n = body.get("top_n", len(texts))
    if top_n is None:
        top_n = len(texts)
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise ApiError(400, f"'top_n' must be a positive integer, got {top_n!r}", param="top_n")
    return_documents = body.get("return_documents", True)
    if not isinstance(return_documents, bool):
        raise ApiError(400, "'return_documents' must be true or false", param="return_documents")
    return model, query, texts, min(top_n, len(texts)), return_documents


def rerank(bench: Workbench, model: str, query: str, texts: list[str], top_n: int,
           return_documents: bool) -> dict[str, Any]:
    """The rerank response (blocking: call it from a worker thread)."""
    from localqwen.retrieval.rerank import get_reranker

    try:
        reranker = get_reranker(model, manager=bench.services.device)
    except Exception as exc:  # noqa: BLE001 - a missing or broken model folder, or no network for a hub id
        raise ApiError(503, f"cannot load the reranker {model!r}: {type(exc).__name__}: {exc}",
                       code="model_unavailable") from None
    scores = reranker.scores(query, texts)
    order = sorted(range(len(texts)), key=lambda i: scores[i], reverse=True)[:top_n]
    results = []
    for index in order:
        entry: dict[str, Any] = {"index": index, "relevance_score": scores[index]}
        if return_documents:
            entry["document"] = {"text": texts[index]}
        results.append(entry)
    tokenizer = getattr(reranker.model, "tokenizer", None)
    tokens = sum(len(tokenizer(query, text, truncation=True)["input_ids"]) for text in texts) if tokenizer else 0
    return {"id": f"rerank-{uuid.uuid4().hex[:24]}", "object": "list", "model": model, "results": results,
            "usage": {"total_tokens": tokens, "prompt_tokens": tokens}}
