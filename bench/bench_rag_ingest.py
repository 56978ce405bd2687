"""Ingestion throughput: a knowledge base's add_paths (read, detect encoding, chunk by tokens,
embed, write LanceDB + SQLite) in chunks per second, against a bare sentence-transformers encode
of exactly the same chunk texts, measured in the same run. Prints the ratio (goal >= 0.9).

The two are measured in alternating rounds and each keeps its best round, so load from other
processes on a shared machine does not land on one side only.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from rag_bench_data import load_dataset


def main(n_docs: int = 120, rounds: int = 3) -> float:
    with tempfile.TemporaryDirectory() as home:
        os.environ["LOCALQWEN_HOME"] = home
        from localqwen.app import Workbench
        from localqwen.retrieval.embeddings import get_embedder
        from localqwen.retrieval.knowledge_base import index_text

        data = load_dataset("scifact")
        folder = Path(home) / "docs"
        folder.mkdir()
        for doc_id, text in zip(data.doc_ids[:n_docs], data.doc_texts[:n_docs], strict=True):
            (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8")
        embedder = get_embedder()
        embedder.encode(["warm up"] * 8)
        manager = Workbench.create().services.retrieval

        kb_times, bare_times, chunks = [], [], 0
        for round_number in range(rounds):
            kb = manager.create(f"bench{round_number}")
            start = time.perf_counter()
            chunks = kb.ingest([folder]).result["chunks"]
            kb_times.append(time.perf_counter() - start)
            snapshot = kb.index()
            texts = [index_text(h, t) for h, t in zip(snapshot.headings, snapshot.texts, strict=True)]
            start = time.perf_counter()
            for begin in range(0, len(texts), 256):  # same batching as ingestion
                embedder.encode(texts[begin:begin + 256])
            bare_times.append(time.perf_counter() - start)
            print(f"   round {round_number + 1}: add_paths {kb_times[-1]:.1f} s, bare encode {bare_times[-1]:.1f} s")

    kb_rate, bare_rate = chunks / min(kb_times), len(texts) / min(bare_times)
    print(f"{n_docs} files, {chunks} chunks (best of {rounds} alternating rounds)")
    print(f"   knowledge base add_paths   {kb_rate:7.1f} chunks/s")
    print(f"   bare SentenceTransformer   {bare_rate:7.1f} chunks/s")
    ratio = kb_rate / bare_rate
    print(f"ratio (ingestion / bare encode): {ratio:.3f}")
    return ratio


if __name__ == "__main__":
    sys.exit(0 if main() >= 0.9 else 1)
