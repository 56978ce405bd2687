"""Which embedder the memory chat reads with: the configured one, else the bundled bge, else MiniLM."""

from __future__ import annotations

from localqwen.retrieval import onnx_embedder
from localqwen.retrieval.embeddings import DEFAULT_EMBEDDING_MODEL
from localqwen.retrieval.onnx_embedder import BGE_SMALL


def test_the_memory_chat_reads_with_bge_where_installed_else_minilm(monkeypatch):
    from localqwen_memory.store import memory_embedder_name

    assert memory_embedder_name() == BGE_SMALL
    assert memory_embedder_name("my/own-embedder") == "my/own-embedder"  # the plugin's setting wins
    monkeypatch.setattr(onnx_embedder, "bundled_bge_folder", lambda: None)
    assert memory_embedder_name() == DEFAULT_EMBEDDING_MODEL
