"""The LoCoMo suite on one conversation (BM25 mode: no embedder on the 2-core test machine)."""

from __future__ import annotations

import pytest
from localqwen_memory.locomo_eval import default_data, evaluate_locomo, load


def test_locomo_one_conversation_beats_the_baseline():
    if not default_data().is_file():
        pytest.skip(f"LoCoMo data absent: {default_data()}")
    report = evaluate_locomo(load(default_data())[:1], mode="bm25")
    for key in ("all_at_10", "multi_hop", "temporal", "open_domain", "single_hop", "session_all_at_5", "p95_ms"):
        assert key in report and key in report["baseline"]
    assert report["questions"] == report["baseline"]["questions"] > 100
    assert report["all_at_10"] > report["baseline"]["all_at_10"]
    assert report["p95_ms"] < 50
