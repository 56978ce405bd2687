"""The DPO proof, short: audited runs -> medical-dpo pairs -> a tiny Qwen3 trained with DPO through
the project's job runner prefers the audited answer on held-out questions."""

from __future__ import annotations

import pytest
from localqwen_medical.dpo_proof import DpoProofSizes, run_dpo_proof, simulate_runs, split_rows


def test_simulated_runs_go_through_the_real_auditor(tmp_path):
    counts = simulate_runs(tmp_path / "audit_log.jsonl")
    # Every first draft recommends a drug the patient's fact rules out, every refinement avoids it.
    assert counts["draft_failed"] == counts["refine_passed"] == counts["questions"] > 50


def test_split_keeps_held_out_questions_unseen():
    rows = [{"prompt": f"q{i % 10}", "chosen": "a", "rejected": "b"} for i in range(40)]
    train, held = split_rows(rows, 0.3, seed=1)
    assert len(train) + len(held) == 40 and not {r["prompt"] for r in train} & {r["prompt"] for r in held}


@pytest.mark.slow  # a tiny model's DPO job: ~1-2 minutes on a busy 2-core CPU
def test_dpo_makes_held_out_audited_answers_preferred(tmp_path):
    result = run_dpo_proof(tmp_path, DpoProofSizes(epochs=2.0))
    assert result["held_out_pairs"] >= 15
    assert result["margin_accuracy"] >= 0.9 and result["mean_margin"] > 0
    assert result["preference_accuracy_after"] > result["preference_accuracy_before"]
