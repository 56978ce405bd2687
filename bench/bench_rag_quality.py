"""Retrieval quality on real judged sets: nDCG@10 and recall@100 for BM25, dense, hybrid and
hybrid + rerank on BEIR SciFact and NFCorpus (read in place from ../shared/data).

    python bench/bench_rag_quality.py                       # both sets, no rerank
    python bench/bench_rag_quality.py --reranker PATH_OR_ID # plus a cross-encoder rerank
    python bench/bench_rag_quality.py --sets scifact --fts  # also LanceDB's own full-text index

Prints hybrid / BM25 nDCG@10 per set (goal >= 1.05). Document vectors are cached in the app cache.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

from rag_bench_data import LOADERS, TUNING_SPLIT, cached_vectors, load_dataset

from localqwen.retrieval.evaluation import evaluate
from localqwen.retrieval.search import FusionSettings, SearchIndex

PLAIN_RRF = FusionSettings(method="rrf", candidates=100, rrf_k=60, bm25_weight=1.0, dense_weight=1.0)


def run_mode(index: SearchIndex, data, query_vectors, mode: str, reranker=None, depth: int = 100):
    run = {}
    for row, qid in enumerate(data.queries):
        query = data.queries[qid]
        vector = query_vectors[row]
        if reranker is None:
            ranked = index.ranked_ids(query, vector, mode=mode, depth=depth)
            run[qid] = [data.doc_ids[i] for i, _ in ranked]
        else:
            hits = index.search(query, vector, k=depth, mode=mode, reranker=reranker)
            run[qid] = [h.chunk_id for h in hits]
    return evaluate(run, data.qrels)


def lancedb_fts(data, directory: str):
    """LanceDB's built-in full-text index (tantivy-free native FTS) over the same documents."""
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(directory)
    table = db.create_table(data.name, pa.table({"doc_id": data.doc_ids, "text": data.doc_texts}))
    table.create_fts_index("text", stem=True, remove_stop_words=True, lower_case=True)
    run = {}
    for qid, query in data.queries.items():
        clean = " ".join(w for w in query.replace('"', " ").split())
        rows = table.search(clean, query_type="fts").limit(100).to_list()
        run[qid] = [r["doc_id"] for r in rows]
    return evaluate(run, data.qrels)


GRID = ([FusionSettings(method="convex", alpha=a / 10) for a in range(2, 9)]
        + [FusionSettings(method="rrf", bm25_weight=1.0, dense_weight=w, rrf_k=k) for w in (0.5, 1.0, 1.5) for k in (10, 60)])


def tune(sets: list[str]) -> dict[str, float]:
    """Score every fusion setting on each set's tuning split; print the table (test is untouched)."""
    totals: dict[str, float] = {}
    for name in sets:
        data = load_dataset(name, TUNING_SPLIT[name])
        doc_vectors = cached_vectors(data.doc_texts, None, f"{name}-docs")
        query_vectors = cached_vectors([data.queries[q] for q in data.queries], None, f"{name}-{TUNING_SPLIT[name]}-queries")
        index = SearchIndex(data.doc_texts, doc_vectors, chunk_ids=data.doc_ids)
        base = run_mode(index, data, query_vectors, "bm25")["ndcg@10"]
        print(f"== {name} {TUNING_SPLIT[name]} ({len(data.queries)} queries): bm25 nDCG@10 {base:.4f}")
        for settings in GRID:
            index.settings = settings
            score = run_mode(index, data, query_vectors, "hybrid")["ndcg@10"]
            label = (f"convex alpha={settings.alpha:.1f}" if settings.method == "convex"
                     else f"rrf k={settings.rrf_k} dense_weight={settings.dense_weight}")
            totals[label] = totals.get(label, 0.0) + score / base / len(sets)
            print(f"   {label:32s} nDCG@10 {score:.4f}  ({score / base:.3f} x bm25)")
    best = max(totals, key=totals.get)
    print(f"best on tuning splits (mean ratio over sets): {best} ({totals[best]:.3f})")
    return totals


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(LOADERS))
    parser.add_argument("--reranker", default=None, help="cross-encoder folder or hub id")
    parser.add_argument("--fts", action="store_true", help="also score LanceDB's full-text index")
    parser.add_argument("--rank-bm25", action="store_true", help="also score rank-bm25 (slow on big sets)")
    parser.add_argument("--tune", action="store_true",
                        help="grid-search fusion settings on the train/dev judgments (never on test)")
    args = parser.parse_args(argv)
    if args.tune:
        return tune(args.sets)

    reranker = None
    if args.reranker:
        from localqwen.retrieval.rerank import get_reranker

        try:
            reranker = get_reranker(args.reranker)
            print(f"reranker: {reranker.name}")
        except Exception as exc:  # report where no cross-encoder can be loaded, keep the rest
            print(f"reranker {args.reranker!r} could not be loaded here: {exc}")

    ratios = {}
    for name in args.sets:
        data = load_dataset(name)
        doc_vectors = cached_vectors(data.doc_texts, None, f"{name}-docs")
        query_vectors = cached_vectors([data.queries[q] for q in data.queries], None, f"{name}-queries")
        index = SearchIndex(data.doc_texts, doc_vectors, chunk_ids=data.doc_ids)
        print(f"== {name}: {len(data.doc_ids)} docs, {len(data.queries)} test queries")
        results = {}
        for label, mode, settings in (("bm25 (bm25s)", "bm25", None), ("dense (MiniLM)", "dense", None),
                                      ("hybrid, plain RRF", "hybrid", PLAIN_RRF),
                                      ("hybrid (default fusion)", "hybrid", FusionSettings())):
            if settings:
                index.settings = settings
            start = time.perf_counter()
            results[label] = run_mode(index, data, query_vectors, mode)
            results[label]["s"] = time.perf_counter() - start
        if args.rank_bm25:
            slow = SearchIndex(data.doc_texts, doc_vectors, chunk_ids=data.doc_ids, bm25_backend="rank_bm25")
            results["bm25 (rank-bm25)"] = run_mode(slow, data, query_vectors, "bm25")
        if args.fts:
            with tempfile.TemporaryDirectory() as tmp:
                results["bm25 (LanceDB FTS)"] = lancedb_fts(data, tmp)
        if reranker is not None:
            index.settings = FusionSettings()
            results["hybrid + rerank"] = run_mode(index, data, query_vectors, "hybrid", reranker=reranker)
        for label, metrics in results.items():
            print(f"   {label:26s} nDCG@10 {metrics['ndcg@10']:.4f}   recall@100 {metrics['recall@100']:.4f}")
        base = results["bm25 (bm25s)"]["ndcg@10"]
        for label in ("hybrid, plain RRF", "hybrid (default fusion)"):
            print(f"   {label} / bm25 nDCG@10 = {results[label]['ndcg@10'] / base:.3f}")
        ratios[name] = results["hybrid (default fusion)"]["ndcg@10"] / base
    print("ratio (hybrid / bm25 nDCG@10): " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    return ratios


if __name__ == "__main__":
    ratios = main()
    sys.exit(0 if all(r >= 1.05 for r in ratios.values()) else 1)
