"""Contradictions, near duplicates and forget requests on a real SQLite store (BM25 search)."""

from __future__ import annotations

from localqwen_memory.store import MemoryStore
from localqwen_memory.updates import forget_matching, forget_request, parse_statement, remember
from localqwen_memory.updates_eval import evaluate_updates

from localqwen.storage.database import Database


def make_store(tmp_path) -> MemoryStore:
    return MemoryStore(Database(tmp_path / "memory.sqlite3"))


def test_statements_contradictions_and_duplicates(tmp_path):
    assert parse_statement("My favorite colour is blue.").attribute == "favourite colour"
    assert parse_statement("I moved to Berlin").value == "Berlin"
    assert parse_statement("hello there") is None
    store = make_store(tmp_path)
    old = remember(store, "I live in Paris")
    new = remember(store, "I moved to Berlin")
    assert new.action == "superseded" and new.replaced[0].id == old.memory.id
    assert store.get(old.memory.id).superseded_by == new.memory.id
    assert remember(store, "I moved to Berlin!").action == "duplicate"
    assert remember(store, "Yes, I moved to Berlin").action == "duplicate"  # near duplicate: 4 of 5 words


def test_forget_requests_resolve_or_ask(tmp_path):
    store = make_store(tmp_path)
    dog = remember(store, "I have a dog called Rex").memory
    remember(store, "My sister plays the cello")
    assert forget_request("Please forget that I have a dog called Rex.") == "I have a dog called Rex"
    assert forget_request("what do you know about me") is None
    result = forget_matching(store, "I have a dog called Rex", "default")
    assert result.forgotten.id == dog.id and "Forgotten memory" in result.message
    unsure = forget_matching(store, "the weather", "default")
    assert unsure.forgotten is None


def test_updates_suite_meets_its_goals(tmp_path):
    report = evaluate_updates(make_store(tmp_path))
    assert report["pairs"] == 100 and report["current_value_rate"] == 1.0 and report["forget_rate"] == 1.0
