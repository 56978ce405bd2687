"""Query latency over 10k and 100k chunks: hybrid search (bm25s + dense matrix product + fusion,
excluding the query embedding) against rank-bm25 alone, plus bm25s alone and LanceDB's
full-text index, all measured in the same run on the same chunks.

Chunks are 40-word windows (stride 15) over SciFact + NFCorpus text (real vocabulary and
lengths); their vectors are random unit vectors, since dense search speed does not depend on the
values. rank-bm25 and hybrid run in alternating blocks, best of 3 rounds each. Prints hybrid p50 /
rank-bm25 p50 (goal <= 0.10).
"""

# ruff: noqa: B023 - the timing lambdas run immediately, inside their loop iteration
from __future__ import annotations

import sys
import tempfile
import time

from rag_bench_data import load_dataset

from localqwen.retrieval.bm25 import BM25Index
from localqwen.retrieval.search import SearchIndex


def windows(texts: list[str], size: int = 40, stride: int = 15) -> list[str]:
    out = []
    for text in texts:
        words = text.split()
        for start in range(0, max(1, len(words) - size + stride), stride):
            out.append(" ".join(words[start:start + size]))
    return out


def percentiles(samples: list[float]) -> tuple[float, float]:
    import numpy as np

    return float(np.percentile(samples, 50)) * 1000, float(np.percentile(samples, 95)) * 1000


def timed(fn, queries) -> list[float]:
    times = []
    for query in queries:
        start = time.perf_counter()
        fn(query)
        times.append(time.perf_counter() - start)
    return times


def main(sizes: tuple[int, ...] = (10_000, 100_000), n_queries: int = 200, n_slow: int = 40,
         n_rounds: int = 3) -> dict[str, float]:
    import numpy as np

    scifact, nfcorpus = load_dataset("scifact"), load_dataset("nfcorpus")
    pool = windows(scifact.doc_texts + nfcorpus.doc_texts)
    queries = list(scifact.queries.values())[:n_queries]
    rng = np.random.default_rng(0)
    print(f"{len(pool)} chunk windows available; {len(queries)} queries ({n_slow} for rank-bm25)")
    ratios = {}
    for size in sizes:
        texts = (pool * (size // len(pool) + 1))[:size]
        vectors = rng.standard_normal((size, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        query_vectors = {q: v for q, v in zip(queries, rng.standard_normal((len(queries), 384)).astype(np.float32), strict=True)}

        start = time.perf_counter()
        index = SearchIndex(texts, vectors)
        build_bm25s = time.perf_counter() - start
        start = time.perf_counter()
        slow = BM25Index(texts, backend="rank_bm25")
        build_rank = time.perf_counter() - start

        # The pair the goal compares runs in alternating blocks (rank-bm25, then hybrid) for a few
        # rounds; each keeps its best round, so load from other processes on a shared machine
        # does not land on one side only.
        rounds: dict[str, list[list[float]]] = {"rank-bm25 alone": [], "hybrid (bm25s+dense+fusion)": []}
        for _ in range(n_rounds):
            rounds["rank-bm25 alone"].append(timed(lambda q: slow.search(q, 100), queries[:n_slow]))
            rounds["hybrid (bm25s+dense+fusion)"].append(
                timed(lambda q: index.ranked_ids(q, query_vectors[q], depth=10), queries))
        rows = {label: min(runs, key=lambda samples: percentiles(samples)[0]) for label, runs in rounds.items()}
        rows["bm25s alone"] = timed(lambda q: index.bm25.search(q, 100), queries)
        with tempfile.TemporaryDirectory() as tmp:
            import lancedb
            import pyarrow as pa

            table = lancedb.connect(tmp).create_table("t", pa.table({"text": texts}))
            start = time.perf_counter()
            table.create_fts_index("text", stem=True, remove_stop_words=True)
            build_fts = time.perf_counter() - start
            rows["LanceDB FTS alone"] = timed(
                lambda q: table.search(q.replace('"', " "), query_type="fts").limit(100).to_arrow(), queries)
        print(f"== {size} chunks (index build: bm25s {build_bm25s:.1f} s, rank-bm25 {build_rank:.1f} s, "
              f"LanceDB FTS {build_fts:.1f} s)")
        for label, samples in rows.items():
            p50, p95 = percentiles(samples)
            print(f"   {label:26s} p50 {p50:8.2f} ms   p95 {p95:8.2f} ms")
        ratio = percentiles(rows["hybrid (bm25s+dense+fusion)"])[0] / percentiles(rows["rank-bm25 alone"])[0]
        print(f"   hybrid / rank-bm25 p50 = {ratio:.3f}")
        ratios[f"{size}"] = ratio
    print("ratio (hybrid p50 / rank-bm25 p50): " + ", ".join(f"{k} chunks {v:.3f}" for k, v in ratios.items()))
    return ratios


if __name__ == "__main__":
    sys.exit(0 if all(r <= 0.10 for r in main().values()) else 1)
