"""The memory store on a real SQLite file (and real LanceDB + MiniLM for the vector test)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
from localqwen_memory.store import MemoryStore, MemoryStoreError

from localqwen.storage.database import Database


def make_store(folder: Path, embedder=None) -> MemoryStore:
    return MemoryStore(Database(folder / "memory.sqlite3"), folder / "vectors", embedder=embedder)


def test_add_dedup_supersede_history_forget_and_consolidation_set(tmp_path):
    store = make_store(tmp_path)
    first, created = store.add("I live in Paris", subject="user", attribute="home city", value="Paris")
    again, created_again = store.add("i live in PARIS!")
    assert created and not created_again and again.id == first.id
    turn, _ = store.add("We talked about the weather", kind="turn", source_session=3, source_message=5)
    assert turn.fact is None and turn.source == "session 3, message 5"
    new = store.supersede(first.id, {"text": "I moved to Berlin", "value": "Berlin"})
    old = store.get(first.id)
    assert old.status == "superseded" and old.superseded_by == new.id and old.valid_to is not None
    assert [m.id for m in store.history(new.id)] == [first.id, new.id] == [m.id for m in store.history(first.id)]
    assert [h.memory.id for h in store.search("where did I move", k=5)][0] == new.id
    assert first.id not in {h.memory.id for h in store.search("Paris", k=5)}
    store.mark_consolidated([new.id], "adapter-1")
    assert {m.id for m in store.consolidation_set()} == {new.id, turn.id}
    gone = store.forget(new.id)
    assert gone.status == "forgotten" and gone.consolidation == "excluded" and gone.text == ""
    assert new.id not in {h.memory.id for h in store.search("Berlin", k=5)}
    assert {m.id for m in store.consolidation_set()} == {turn.id}
    with pytest.raises(MemoryStoreError, match="forgotten"):
        store.add("I moved to Berlin")
    store.count("extraction_failed")
    stats = store.stats()
    assert stats["counters"]["extraction_failed"] == 1 and stats["personas"]["default"]["status"]["forgotten"] == 1


def test_export_import_roundtrip_dedup_and_corrupt_input(tmp_path):
    store = make_store(tmp_path / "a")
    one, _ = store.add("My dog is called Rex")
    two = store.supersede(one.id, {"text": "My dog is called Odin"})
    forgotten, _ = store.add("I owe Bob ten euros")
    store.forget(forgotten.id)
    data = store.export()
    other = make_store(tmp_path / "b")
    assert other.import_(json.dumps(data)) == {"added": 2, "skipped": 0, "tombstones": 1}
    assert other.import_(data) == {"added": 0, "skipped": 3, "tombstones": 0}
    imported = {m.statement: m for m in other.list(status=None)}
    assert imported["My dog is called Rex"].superseded_by == imported["My dog is called Odin"].id
    assert two.statement in [h.memory.statement for h in other.search("dog", k=3)]
    with pytest.raises(MemoryStoreError, match="invalid JSON"):
        other.import_("{not json")
    with pytest.raises(MemoryStoreError, match="format"):
        other.import_({"persona": "x", "memories": []})
    with pytest.raises(MemoryStoreError, match="memories.0"):
        other.import_({**data, "memories": [{"kind": "fact", "text": ""}]})
    before = other.stats()["total"]
    with pytest.raises(MemoryStoreError, match="status"):
        other.import_({**data, "memories": [{"text": "ok"}, {"text": "bad", "status": "deleted"}]})
    assert other.stats()["total"] == before  # a bad file changes nothing


def _writer(folder: str, name: str, count: int) -> None:
    store = make_store(Path(folder))
    for number in range(count):
        store.add(f"{name} remembers fact number {number}", persona="shared")


def test_two_processes_writing_at_once(tmp_path):
    make_store(tmp_path)  # migrate first, as the app does at start
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(tmp_path), name, 60)) for name in ("alpha", "beta")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    store = make_store(tmp_path)
    memories = store.list("shared")
    assert len(memories) == 120 and len({m.id for m in memories}) == 120
    assert store._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert store.search("beta remembers fact number 7", "shared", k=1)[0].memory.statement.startswith("beta")


@pytest.mark.slow
def test_vectors_are_rebuilt_from_sqlite(tmp_path):
    import shutil

    from localqwen.retrieval.embeddings import get_embedder

    embedder = get_embedder()
    store = make_store(tmp_path, embedder=lambda: embedder)
    cat, _ = store.add("My cat Miso sleeps on the piano")
    store.add("I work as a nurse at the city hospital")
    assert store.search("feline pet", k=1, mode="dense")[0].memory.id == cat.id
    shutil.rmtree(tmp_path / "vectors")
    fresh = make_store(tmp_path, embedder=lambda: embedder)
    assert fresh.rebuild_vectors() == 2
    assert fresh.search("feline pet", k=1, mode="dense")[0].memory.id == cat.id
    assert fresh.embeddings([cat.id]).shape == (1, embedder.dimension)


def test_adding_extends_the_index_and_anything_else_rebuilds_it(tmp_path, monkeypatch):
    store = make_store(tmp_path)
    other_writer = make_store(tmp_path)  # another process's store on the same file
    rebuilt = make_store(tmp_path)
    rebuilt.incremental_index = False  # always rebuilds: what the extended index must equal
    builds = []
    build = store._build_index
    monkeypatch.setattr(store, "_build_index", lambda persona: builds.append(persona) or build(persona))
    for number, text in enumerate(["My cat Miso sleeps on the piano", "I work as a nurse at the hospital",
                                   "Caroline paints sunsets at the lake", "We went camping by the lake"]):
        store.add(text, persona="p", source_session=number, kind="turn")
        store.search("lake", "p")
    other_writer.add("Melanie bought a pottery wheel for the lake house", persona="p")
    hits = store.search("lake pottery", "p", k=5)
    assert builds == ["p"]  # built once, then extended by every add, the other store's included
    assert hits[0].memory.statement.startswith("Melanie")
    for query in ("lake", "piano cat", "nurse hospital", "camping lake pottery"):
        want = rebuilt.search(query, "p", k=5)
        got = store.search(query, "p", k=5)
        assert [(h.memory.id, round(h.score, 5)) for h in got] == [(h.memory.id, round(h.score, 5)) for h in want]
    snapshot = store.snapshot("p")
    store.mark_consolidated([hits[0].memory.id], "adapter-1")  # changes a kept record: rebuilt
    assert store.snapshot("p") is not snapshot and builds == ["p", "p"]
    assert {m.consolidation for m in store.snapshot("p").records if m.id == hits[0].memory.id} == {"consolidated"}
    store.forget(hits[0].memory.id)
    assert hits[0].memory.id not in {h.memory.id for h in store.search("lake pottery", "p", k=5)}
    assert builds == ["p", "p", "p"]
    assert store.snapshot("p") is store.snapshot("p")  # no write, no work


@pytest.mark.slow
def test_one_memory_at_a_time_the_vector_table_is_compacted(tmp_path):
    from localqwen.retrieval.embeddings import get_embedder

    embedder = get_embedder()
    store = make_store(tmp_path, embedder=lambda: embedder)
    store.compact_after_appends = 5
    for number in range(12):  # a chat: each turn's memory, then a recall that embeds it
        store.add(f"On day {number} I planted {number + 1} tomato seedlings", persona="p")
        store.search("tomato", "p", k=1)
        if store.compaction is not None:
            store.compaction.join(60)  # one at a time: so the count below is the same every run
    stats = store._table().stats()
    assert stats["num_rows"] == 12
    # two compactions (after the 5th and 10th appends) leave 1 merged fragment + the last 2 appends
    assert stats["fragment_stats"]["num_fragments"] == 3
    assert store.search("how many seedlings on day 7", "p", k=1)[0].memory.statement.startswith("On day 7")
    fresh = make_store(tmp_path, embedder=lambda: embedder)  # reads the compacted table back
    assert len(fresh._stored_vectors(embedder.name)) == 12
