"""Ingestion throughput: a knowledge base's add_paths (read, detect encoding, chunk by tokens,
embed, write LanceDB + SQLite) in chunks per second, against a bare sentence-transformers encode
of exactly the same chunk texts, measured in the same run. Prints the ratio (goal >= 0.9).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from rag_bench_data import load_dataset


def main(n_docs: int = 300) -> float:
    with tempfile.TemporaryDirectory() as home:
        os.environ["LOCALQWEN_HOME"] = home
        from localqwen.app import Workbench
        from localqwen.retrieval.embeddings import get_embedder
        from localqwen.retrieval.knowledge_base import KnowledgeBaseManager, index_text

        data = load_dataset("scifact")
        folder = Path(home) / "docs"
        folder.mkdir()
        for doc_id, text in zip(data.doc_ids[:n_docs], data.doc_texts[:n_docs], strict=True):
            (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8")
        embedder = get_embedder()
        embedder.encode(["warm up"] * 8)
        manager = KnowledgeBaseManager(Workbench.create().services)

        kb = manager.create("bench")
        start = time.perf_counter()
        done = kb.ingest([folder])
        kb_seconds = time.perf_counter() - start
        chunks = done.result["chunks"]
        snapshot = kb.index()
        texts = [index_text(h, t) for h, t in zip(snapshot.headings, snapshot.texts, strict=True)]

        start = time.perf_counter()
        for begin in range(0, len(texts), 256):  # same batching as ingestion
            embedder.encode(texts[begin:begin + 256])
        bare_seconds = time.perf_counter() - start

    kb_rate, bare_rate = chunks / kb_seconds, len(texts) / bare_seconds
    print(f"{n_docs} files, {chunks} chunks")
    print(f"   knowledge base add_paths   {kb_rate:7.1f} chunks/s ({kb_seconds:.1f} s)")
    print(f"   bare SentenceTransformer   {bare_rate:7.1f} chunks/s ({bare_seconds:.1f} s)")
    ratio = kb_rate / bare_rate
    print(f"ratio (ingestion / bare encode): {ratio:.3f}")
    return ratio


if __name__ == "__main__":
    sys.exit(0 if main() >= 0.9 else 1)
