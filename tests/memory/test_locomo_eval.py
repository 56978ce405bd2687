"""The LoCoMo suite on one conversation (BM25 mode: no embedder on the 2-core test machine)."""

from __future__ import annotations

import pytest
from localqwen_memory.locomo_eval import default_data, evaluate_locomo, load, observations_of, turns_of


def test_locomo_one_conversation_beats_the_baseline():
    if not default_data().is_file():
        pytest.skip(f"LoCoMo data absent: {default_data()}")
    report = evaluate_locomo(load(default_data())[:1], mode="bm25")
    for key in ("all_at_10", "multi_hop", "temporal", "open_domain", "single_hop", "session_all_at_5", "p95_ms"):
        assert key in report and key in report["baseline"]
    assert report["questions"] == report["baseline"]["questions"] > 100
    assert report["all_at_10"] > report["baseline"]["all_at_10"]
    assert report["p95_ms"] < 50
    by_category = report["session_all_at_5_by_category"]
    assert set(by_category) == {"multi_hop", "temporal", "open_domain", "single_hop"}
    # the overall share is the questions' mean, so it lies between its categories' shares
    shares = [value for value in by_category.values() if value is not None]
    assert min(shares) <= report["session_all_at_5"] <= max(shares)


def test_locomo_observations_as_facts_count_for_their_source_turns():
    if not default_data().is_file():
        pytest.skip(f"LoCoMo data absent: {default_data()}")
    sample = load(default_data())[0]
    facts = observations_of(sample)
    turn_ids = {turn["id"] for turn in turns_of(sample)}
    assert len(facts) > 100 and all(fact["turns"] and set(fact["turns"]) <= turn_ids for fact in facts[:50])
    report = evaluate_locomo([sample], mode="bm25", facts=True)
    assert report["facts"].startswith("LoCoMo observations") and report["questions"] > 100
    assert report["all_at_10"] > report["baseline"]["all_at_10"] and report["multi_hop"] > 0
