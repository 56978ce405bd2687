"""Word-by-word matching of a query with memories (late interaction): the real MiniLM and the
real bge-small-en-v1.5 (ONNX, the memory chat's default), a real SQLite store and its LanceDB
token table."""

from __future__ import annotations

import numpy as np
import pytest
from localqwen_memory.recall import RankSettings, rank_memories
from localqwen_memory.store import MemoryStore, index_text
from localqwen_memory.token_vectors import TOKEN_TABLE
from localqwen_memory.vector_cache import CachedEmbedder

from localqwen.retrieval.late_interaction import content_mask, dequantize, normalised, quantize
from localqwen.storage.database import Database


@pytest.fixture(scope="module", params=["offline:all-MiniLM-L6-v2", "offline:bge-small-en-v1.5"])
def embedder(request):
    from localqwen.retrieval.embeddings import get_embedder

    return get_embedder(request.param)


def make_store(folder, embedder):
    return MemoryStore(Database(folder / "memory.sqlite3"), folder / "vectors", embedder=lambda: embedder)


def test_int8_token_vectors_come_back_within_a_percent_and_stop_words_are_no_topic():
    tokens = normalised(np.random.default_rng(0).normal(size=(7, 384)))
    back = dequantize(*quantize(tokens), 384)
    assert back.shape == (7, 384) and np.abs(back - tokens).max() < 0.01 * np.abs(tokens).max()
    assert dequantize(*quantize(np.zeros((0, 384))), 384).shape == (0, 384)
    keep = content_mask(["what", "did", "melanie", "paint", "##ed", "?", "\u2581pottery", "\u2581the", "2023"])
    assert keep.tolist() == [False, False, True, True, True, False, True, False, True]


def test_token_vectors_come_from_the_sentence_vectors_forward_pass(embedder):
    statement = "Melanie: I painted a lake at sunrise."
    text = f"{statement}\nMelanie, 8 May 2023\nCaroline: wow, show me"
    vectors, tokens = embedder.encode_with_tokens([text, "hi"], [embedder.leading_pieces(statement), 1])
    assert np.allclose(vectors, embedder.encode([text, "hi"]), atol=1e-5)
    assert [len(t) for t in tokens] == [embedder.leading_pieces(statement), 1]
    assert np.allclose(np.linalg.norm(tokens[0], axis=1), 1, atol=1e-5)
    # the statement's words as they read inside the whole text (with its context), not alone
    alone = embedder.encode_with_tokens([statement], [embedder.leading_pieces(statement)])[1][0]
    assert tokens[0].shape == alone.shape and not np.allclose(tokens[0], alone, atol=1e-3)
    vector, query = embedder.encode_query_tokens("What did Melanie paint?")
    assert np.allclose(vector, embedder.encode_query("What did Melanie paint?"), atol=1e-5)
    assert len(query) == 2  # "melanie", "paint"
    assert len(embedder.encode_query_tokens("what is it?")[1]) == 4  # stop words only: all its pieces, "?" too


def test_search_matches_word_by_word_from_the_stored_token_vectors(tmp_path, embedder, monkeypatch):
    store = make_store(tmp_path, embedder)
    kayak, _ = store.add("Evan: I went kayaking and skiing last winter", persona="p", kind="turn", source_session=1,
                         source_message=0)
    store.add("Evan: the weather report says rain tomorrow", persona="p", kind="turn", source_session=2,
              source_message=0)
    hits = store.search("What hobbies does Evan have?", "p", k=2)
    query = embedder.encode_query_tokens("What hobbies does Evan have?")[1]
    assert all(h.token_match is not None and len(h.token_match) == len(query) for h in hits)
    # the match is each query word's best cosine among the memory's own words (int8-stored)
    own = embedder.encode_with_tokens([index_text(kayak)], [embedder.leading_pieces(kayak.statement)])[1][0]
    by_id = {h.memory.id: h for h in hits}
    assert np.allclose(by_id[kayak.id].token_match, (query @ own.T).max(axis=1), atol=0.02)

    # a fresh process reads them from LanceDB: nothing is encoded again
    fresh = make_store(tmp_path, embedder)
    fresh.search("hobbies", "p", k=1)  # builds the index (vectors from the table)
    monkeypatch.setattr(embedder, "encode_with_tokens", lambda *a, **k: pytest.fail("token vectors re-encoded"))
    again = fresh.search("What hobbies does Evan have?", "p", k=2)
    assert [np.round(h.token_match, 4).tolist() for h in again] == [np.round(h.token_match, 4).tolist() for h in hits]
    monkeypatch.undo()

    # forgetting deletes the memory's token vectors; rebuild_vectors drops and recomputes the table
    store.forget(kayak.id)
    import lancedb

    table = lancedb.connect(str(tmp_path / "vectors")).open_table(TOKEN_TABLE)
    assert kayak.id not in table.to_arrow().to_pydict()["memory_id"]
    assert store.rebuild_vectors() == 1 and table.count_rows() == 1


def test_memories_stored_before_token_matching_get_their_token_vectors_when_first_searched(tmp_path, embedder):
    import lancedb

    store = make_store(tmp_path, embedder)
    store.token_matching = False
    for number, text in enumerate(["Ann: my dog Rex loves the beach", "Ann: I repaired the bike's brakes"]):
        store.add(text, persona="p", kind="turn", source_session=number, source_message=0)
    store.search("pets", "p")
    lancedb.connect(str(tmp_path / "vectors")).drop_table(TOKEN_TABLE)  # as an older version left the folder
    fresh = make_store(tmp_path, embedder)
    hits = fresh.search("What pets does Ann have?", "p", k=2)
    assert all(h.token_match is not None for h in hits)
    assert lancedb.connect(str(tmp_path / "vectors")).open_table(TOKEN_TABLE).count_rows() == 2
    assert fresh.search("dog", "p", mode="bm25", k=1)[0].token_match is None  # BM25 only: no vectors


def test_the_ranking_weighs_each_memory_and_its_session_by_the_word_match(tmp_path):
    # MiniLM: its plain ranking of these turns differs from their word match (bge's already follows
    # it), so the weighing shows; the weighing is the same code whichever embedder matched
    from localqwen.retrieval.embeddings import get_embedder

    store = make_store(tmp_path, get_embedder())
    turns = [(1, "Evan: I love kayaking on the lake"), (1, "Sam: cool, and what else?"),
             (1, "Evan: skiing in the winter, always"), (2, "Evan: my hobby shop closed, what a pity"),
             (3, "Evan: the hobby of mine is a secret"), (4, "Evan: I cleaned the garage")]
    for number, (session, text) in enumerate(turns):
        store.add(text, persona="p", kind="turn", source_session=session, source_message=number)
    question = "What hobbies does Evan pursue?"
    off = RankSettings(token_weight=0, session_token_weight=0, neighbour_penalty=0, subject_weight=0)
    words = RankSettings(token_weight=5, session_token_weight=0, neighbour_penalty=0, subject_weight=0)
    sessions = RankSettings(token_weight=0, session_token_weight=5, neighbour_penalty=0, subject_weight=0)
    hits = store.search(question, "p", k=6)
    match = {h.memory.id: float(h.token_match.mean()) for h in hits}
    plain = [h.memory.id for h in rank_memories(store, question, "p", k=6, settings=off)]
    assert plain == [h.memory.id for h in hits]
    weighed = [h.memory.id for h in rank_memories(store, question, "p", k=6, settings=words)]
    assert weighed[0] == max(match, key=match.get) and weighed != plain
    # a session's match takes each query word's best over all of its memories
    best = {}
    for h in hits:
        best[h.memory.source_session] = np.maximum(best.get(h.memory.source_session, h.token_match), h.token_match)
    top_session = max(best, key=lambda s: best[s].mean())
    by_session = rank_memories(store, question, "p", k=6, settings=sessions)
    assert by_session[0].memory.source_session == top_session


def test_the_evaluation_cache_keeps_token_vectors_between_runs(tmp_path, embedder, monkeypatch):
    cached = CachedEmbedder(embedder, tmp_path)
    texts, leading = ["Ann: my dog Rex\nAnn, 1 May", "Bo: tea please"], [5, 4]
    vectors, tokens = cached.encode_with_tokens(texts, leading)
    cached.save()
    again = CachedEmbedder(embedder, tmp_path)
    monkeypatch.setattr(embedder, "encode_with_tokens", lambda *a, **k: pytest.fail("not cached"))
    vectors_back, tokens_back = again.encode_with_tokens(texts, leading)
    assert np.allclose(vectors, vectors_back) and len(again) == 2
    assert all(np.allclose(a, b, atol=1e-3) for a, b in zip(tokens, tokens_back, strict=True))
