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


def test_locomo_extracted_facts_count_for_the_turn_they_were_drawn_from():
    """``--extracted``: the records a real model's extraction left (one per turn, its facts calling
    the speaker "the user") go beside the turns through ``remember``, and a recalled fact counts for
    its turn. Here the records are made from LoCoMo's observations (no model on this machine): each
    observation, written as the extractor writes, is a fact of the first turn it was drawn from. If
    a recalled fact counted for nothing, the facts would only push turns out of the top ten."""
    if not default_data().is_file():
        pytest.skip(f"LoCoMo data absent: {default_data()}")
    sample = load(default_data())[0]
    turns = {turn["id"]: (index, turn) for index, turn in enumerate(turns_of(sample))}
    records: dict[str, dict] = {}
    for fact in observations_of(sample):
        first = next((t for t in fact["turns"] if t in turns), None)
        if first is None:
            continue
        index, turn = turns[first]
        record = records.setdefault(first, {"conversation_id": sample["sample_id"], "turn": first,
                                            "session": turn["session"], "message_index": index,
                                            "speaker": turn["speaker"], "at": None, "facts": []})
        record["facts"].append({"fact": fact["text"].replace(turn["speaker"], "The user", 1), "subject": "user"})
    plain = evaluate_locomo([sample], mode="bm25")
    report = evaluate_locomo([sample], mode="bm25", extracted=list(records.values()))
    assert report["facts"] == "extracted facts beside the turns" and report["questions"] == plain["questions"]
    # the facts find evidence the turns alone missed (uncounted, they would only push turns out)
    assert report["all_at_10"] >= plain["all_at_10"]
    assert report["session_all_at_5"] > plain["session_all_at_5"] and report["multi_hop"] > plain["multi_hop"]
