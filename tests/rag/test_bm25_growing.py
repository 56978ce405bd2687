"""The growing BM25 index scores exactly as bm25s's Lucene variant, however it was grown, and an
index extended by another keeps its own rows and statistics."""

from __future__ import annotations

import random

import numpy as np
import pytest

from localqwen.retrieval.bm25 import BM25Index, Tokenizer
from localqwen.retrieval.bm25_growing import GrowingBM25
from localqwen.retrieval.search import SearchIndex

WORDS = ["apple", "banana", "market", "caroline", "melanie", "painting", "camping", "beach", "dog", "cat", "lake", "hike", "pottery", "the", "of", "and", "running", "ran", "runs", "猫咪", "喜欢", "鱼"]
QUERIES = ["apple market", "caroline caroline painting", "dog running", "猫咪喜欢", "zebra", "the of", ""]


def texts(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def same_scores(index, reference) -> None:
    for query in QUERIES:
        got, want = index.scores(query), reference.scores(query)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=query)


def test_grown_in_steps_scores_as_bm25s_built_at_once():
    corpus, tokenizer = texts(300), Tokenizer()
    index = GrowingBM25(corpus[:40], tokenizer=tokenizer)
    for start in range(40, 300, 37):
        index = index.extended(corpus[start:start + 37])
    assert index.size == 300
    same_scores(index, BM25Index(corpus, tokenizer=tokenizer))
    rows, scores = index.search("apple market", k=10)
    want_rows, want_scores = BM25Index(corpus, tokenizer=tokenizer).search("apple market", k=10)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5)
    assert set(rows[scores > scores[-1] + 1e-4]) == set(want_rows[want_scores > want_scores[-1] + 1e-4])


def test_an_extended_index_leaves_the_old_one_as_it_was_even_extended_twice():
    corpus, tokenizer = texts(120, seed=1), Tokenizer()
    old = GrowingBM25(corpus[:60], tokenizer=tokenizer)
    newer = old.extended(corpus[60:90])
    same_scores(old, BM25Index(corpus[:60], tokenizer=tokenizer))  # its rows, its N and average length
    branch = old.extended(corpus[90:120])  # a second writer from the same old index: copies, no clash
    same_scores(branch, BM25Index(corpus[:60] + corpus[90:120], tokenizer=tokenizer))
    same_scores(newer, BM25Index(corpus[:90], tokenizer=tokenizer))


def test_empty_and_stop_word_only_texts_score_zero():
    index = GrowingBM25(["", "the of"]).extended(["", "and"])
    assert index.size == 4 and not index.scores("the apple").any()
    assert len(index.search("apple")[0]) == 0
    assert GrowingBM25([]).extended(["apple pie"]).search("apple")[0].tolist() == [0]


def test_a_search_index_extended_finds_the_new_rows_by_words_and_vectors():
    base = SearchIndex(["red apple", "green pear"], np.eye(3, dtype=np.float32)[:2], bm25_backend="growing")
    grown = base.extended(["blue plum"], np.eye(3, dtype=np.float32)[2:], chunk_ids=["2"])
    assert [hit.chunk_id for hit in grown.search("plum", np.eye(3, dtype=np.float32)[2], k=1)] == ["2"]
    assert len(base) == 2 and len(grown) == 3 and grown.texts[:2] == base.texts
    with pytest.raises(TypeError, match="growing"):
        SearchIndex(["a"], np.ones((1, 3), dtype=np.float32)).extended(["b"], np.ones((1, 3)), chunk_ids=["1"])
