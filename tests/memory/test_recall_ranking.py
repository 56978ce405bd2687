"""The text recall's ranking (rank_memories) on a real SQLite store, BM25 only (no model load)."""

from __future__ import annotations

from localqwen_memory.prompts import Prompts
from localqwen_memory.recall import RankSettings, rank_memories, session_key, text_recall
from localqwen_memory.store import MemoryStore

from localqwen.storage.database import Database


def test_a_memory_gains_its_sessions_score_and_hand_added_ones_stand_alone(tmp_path):
    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    strong, _ = store.add("The Alps trail, the best trail we hiked on our trail trip", kind="turn",
                          source_session=1, source_message=0)
    weak, _ = store.add("a long trail walk in the rain", kind="turn", source_session=1, source_message=1)
    middle, _ = store.add("the trail in the city park", kind="turn", source_session=2, source_message=0)
    by_hand, _ = store.add("I like the trail by the river near the old mill in town with my dog and my sister on sundays")
    plain = rank_memories(store, "trail", "default", k=4, mode="bm25", settings=RankSettings(session_weight=0))
    assert [h.memory.id for h in plain] == [h.memory.id for h in store.search("trail", k=4, mode="bm25")]
    assert [h.memory.id for h in plain].index(middle.id) < [h.memory.id for h in plain].index(weak.id)
    ranked = rank_memories(store, "trail", "default", k=4, mode="bm25")
    order = [h.memory.id for h in ranked]
    # The weak turn shares session 1 with the best match, so it now comes before session 2's turn.
    assert order[0] == strong.id and order.index(weak.id) < order.index(middle.id)
    assert all("recall" in h.scores for h in ranked) and ranked[0].score == max(h.score for h in ranked)
    assert session_key(by_hand) == ("memory", by_hand.id) != session_key(store.add("trail", persona="p")[0])
    assert rank_memories(store, "trail", "default", k=0) == [] and len(rank_memories(store, "trail", "default", k=2)) == 2
    assert rank_memories(store, "nothing matches", "default", mode="bm25") == []
    recall = text_recall(store, "trail", "default", Prompts.load(), k=2, exclude={strong.id})
    assert [h.memory.id for h in recall.hits] == [h.memory.id for h in ranked if h.memory.id != strong.id][:2]
