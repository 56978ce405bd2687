"""Chunking, BM25 backends, fusion, hybrid search and the IR metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from localqwen.retrieval.bm25 import BM25Index, Tokenizer
from localqwen.retrieval.chunking import chunk_blocks, hf_offsets, regex_offsets
from localqwen.retrieval.evaluation import evaluate, ndcg_at_k, recall_at_k
from localqwen.retrieval.fusion import convex, rrf
from localqwen.retrieval.loaders import Block
from localqwen.retrieval.search import FusionSettings, SearchIndex

CORPUS = [
    "Statins lower LDL cholesterol and reduce heart attacks.",
    "Aspirin inhibits platelet aggregation and prevents clots.",
    "Vitamin D helps absorb calcium; sunlight makes vitamin D.",
    "Running improves cardiovascular fitness and lowers blood pressure.",
    "维生素D有助于钙的吸收。",
]


def test_chunks_overlap_and_keep_page_and_headings():
    words = " ".join(f"word{i}." if i % 10 == 9 else f"word{i}" for i in range(100))
    blocks = [Block(words, page=3, headings=("Intro", "Methods"))]
    chunks = chunk_blocks(blocks, regex_offsets, max_tokens=30, overlap=6)
    assert len(chunks) > 3
    assert all(c.page == 3 and c.heading == "Intro > Methods" for c in chunks)
    assert all(c.tokens <= 30 for c in chunks)
    for first, second in zip(chunks, chunks[1:], strict=False):  # each window starts inside the previous one
        assert second.text.split()[0] in first.text
    assert "word99" in chunks[-1].text and chunks[0].text.startswith("word0")
    # cuts prefer sentence ends ("wordN." every 10 words)
    assert sum(c.text.endswith(".") for c in chunks[:-1]) >= (len(chunks) - 1) // 2


def test_chunks_measured_in_the_embedding_models_tokens():
    from transformers import AutoTokenizer

    from localqwen.retrieval.embeddings import resolve_model_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(None))
    text = "Hydroxymethylglutaryl-coenzyme reductase inhibitors " * 40
    chunks = chunk_blocks([Block(text)], hf_offsets(tokenizer), max_tokens=64, overlap=8)
    for chunk in chunks:
        # re-tokenising a slice may merge differently at its edges: allow one or two pieces
        assert len(tokenizer(chunk.text, add_special_tokens=False)["input_ids"]) <= 66
    with pytest.raises(ValueError):
        chunk_blocks([Block(text)], regex_offsets, max_tokens=10, overlap=9)


def test_tokenizer_stems_drops_stop_words_and_splits_cjk():
    tokens = Tokenizer()("The runners were running to the 维生素D")
    assert "the" not in tokens and "were" not in tokens
    assert "维生" in tokens and "生素" in tokens
    assert any(t.startswith("run") for t in tokens)


def test_bm25_backends_rank_alike():
    fast = BM25Index(CORPUS, backend="bm25s")
    slow = BM25Index(CORPUS, backend="rank_bm25")
    for query in ["vitamin D calcium", "cholesterol heart", "blood clots aspirin", "维生素"]:
        fast_rows, _ = fast.search(query, 3)
        slow_rows, _ = slow.search(query, 3)
        assert fast_rows[0] == slow_rows[0]
    assert fast.search("vitamin D calcium", 3)[0][0] == 2
    assert len(fast.search("zzzz unknown", 3)[0]) == 0
    with pytest.raises(ValueError, match="unknown BM25 backend"):
        BM25Index(CORPUS, backend="nope")


def test_rrf_and_convex_fusion():
    fused = rrf([[1, 2, 3], [3, 1, 4]], k=60)
    assert [item for item, _ in fused][:2] == [1, 3]
    assert math.isclose(dict(fused)[4], 1 / 63)
    weighted = rrf([[1, 2], [2, 1]], weights=[1.0, 2.0])
    assert weighted[0][0] == 2
    bm25 = np.array([0.0, 10.0, 5.0, 0.0])
    dense = np.array([0.9, 0.1, 0.8, 0.2])
    assert [r for r, _ in convex({0, 1, 2}, bm25, dense, alpha=0.0)] == [1, 2, 0]
    assert [r for r, _ in convex({0, 1, 2}, bm25, dense, alpha=1.0)] == [0, 2, 1]
    assert [r for r, _ in convex({0, 1, 2}, bm25, dense, alpha=0.5)][0] == 2  # good in both lists


def test_hybrid_search_uses_both_lists():
    from localqwen.retrieval.embeddings import get_embedder

    embedder = get_embedder()
    index = SearchIndex(CORPUS, embedder.encode(CORPUS), sources=[f"doc{i}.txt" for i in range(len(CORPUS))])
    query = "medicine that reduces blood lipids"
    vector = embedder.encode_query(query)
    hits = index.search(query, vector, k=3)
    assert hits[0].source == "doc0.txt"
    assert {"bm25", "dense"} <= set(hits[0].scores)
    keyword = index.search("aspirin", embedder.encode_query("aspirin"), k=1)
    assert keyword[0].chunk_id == "1"
    for settings in (FusionSettings(method="rrf"), FusionSettings(method="convex", alpha=0.3)):
        index.settings = settings
        assert index.search(query, vector, k=1)[0].chunk_id == "0"


def test_metrics():
    judged = {"a": 2, "b": 1}
    assert ndcg_at_k(["a", "b", "c"], judged) == pytest.approx(1.0)
    assert ndcg_at_k(["c", "a"], judged) == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert recall_at_k(["x", "b"], judged, 100) == 0.5
    scores = evaluate({"q1": ["a"], "q2": []}, {"q1": {"a": 1}, "q2": {"z": 1}})
    assert scores["ndcg@10"] == 0.5 and scores["queries"] == 2


def test_a_memoizing_tokenizer_gives_the_same_tokens_and_keeps_them_safe():
    from localqwen.retrieval.bm25 import BM25Index, MemoizingTokenizer, Tokenizer

    plain, kept = Tokenizer(), MemoizingTokenizer(limit=2)
    texts = ["The hikers were hiking up the hills", "Zebras graze; 3 lions rest", "走路很快"]
    assert [kept(t) for t in texts] == [plain(t) for t in texts]
    first = kept(texts[1])
    first.append("changed")  # a caller's change does not reach the kept tokens
    assert kept(texts[1]) == plain(texts[1])
    assert len(kept._texts) <= 2  # bounded: it forgot the oldest texts when full
    # an index built with it scores exactly as one built with the plain tokenizer
    memo = BM25Index(texts, tokenizer=MemoizingTokenizer())
    assert memo.scores("hiking lions").tolist() == BM25Index(texts).scores("hiking lions").tolist()
