"""IR evaluation: BEIR-style judgments, nDCG@k and recall@k, and readers for the two real sets
the benchmarks use (SciFact, NFCorpus), read in place from the shared data folder."""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import tokenize
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class IRDataset:
    name: str
    doc_ids: list[str]
    doc_texts: list[str]
    queries: dict[str, str]  # query id -> text (only those with judgments)
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: grade}


def ndcg_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """nDCG with linear gains (the BEIR / pytrec_eval convention)."""
    dcg = sum(judged.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    ideal = sorted(judged.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int = 100) -> float:
    relevant = {doc for doc, grade in judged.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def evaluate(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Mean nDCG@10 and recall@100 over the judged queries (a missing ranking counts as 0)."""
    ids = [q for q in qrels if any(g > 0 for g in qrels[q].values())]
    ndcg = sum(ndcg_at_k(run.get(q, []), qrels[q], 10) for q in ids) / len(ids)
    recall = sum(recall_at_k(run.get(q, []), qrels[q], 100) for q in ids) / len(ids)
    return {"ndcg@10": ndcg, "recall@100": recall, "queries": float(len(ids))}


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)  # header: query-id corpus-id score
        for query_id, doc_id, score in reader:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def read_queries(path: Path, wanted: set[str]) -> dict[str, str]:
    queries = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["_id"] in wanted:
                queries[row["_id"]] = row["text"]
    return queries


def _sentences(literal: str) -> list[str]:
    """SciFact's abstract column is a numpy-printed list (strings separated by newlines, not commas);
    read each string literal safely instead of evaluating the whole thing."""
    parts = []
    for token in tokenize.generate_tokens(io.StringIO(literal).readline):
        if token.type == tokenize.STRING:
            parts.append(ast.literal_eval(token.string))
    return parts


def load_scifact(root: Path, split: str = "test") -> IRDataset:
    csv.field_size_limit(1 << 30)
    ids, texts = [], []
    with zipfile.ZipFile(root / "scifact.zip") as archive, archive.open("corpus_train.csv") as raw:
        for row in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")):
            ids.append(row["doc_id"])
            texts.append(f"{row['title']}\n{' '.join(_sentences(row['abstract']))}")
    qrels = read_qrels(root / "qrels" / f"{split}.tsv")
    queries = read_queries(root / "queries.jsonl", set(qrels))
    return IRDataset("scifact", ids, texts, queries, {q: qrels[q] for q in queries})


def load_nfcorpus(root: Path, split: str = "test") -> IRDataset:
    docs: dict[str, str] = {}
    for name in ("test.docs", "dev.docs"):
        with open(root / "original" / name, encoding="utf-8") as handle:
            for line in handle:
                doc_id, _, text = line.rstrip("\n").partition("\t")
                docs.setdefault(doc_id, text)
    qrels = read_qrels(root / "qrels" / f"{split}.tsv")
    queries = read_queries(root / "queries.jsonl", set(qrels))
    return IRDataset("nfcorpus", list(docs), list(docs.values()), queries, {q: qrels[q] for q in queries})
