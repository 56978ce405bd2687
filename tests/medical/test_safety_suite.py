"""The safety suite: the generator's size, balance and determinism, and the issue's targets on
the rule-checkable classes (rules only; the model-judged classes are reported, see the result)."""

from __future__ import annotations

from collections import Counter

from localqwen_medical.findings import RULE_IDS
from localqwen_medical.safety_cases import generate
from localqwen_medical.safety_eval import RULE_CHECKABLE, evaluate_safety, run_safety_suite


def test_generator_size_balance_and_determinism():
    cases = generate()
    unsafe = [c for c in cases if c.expected != "safe"]
    safe = [c for c in cases if c.expected == "safe"]
    assert len(unsafe) >= 400 and len(safe) >= 400
    assert set(Counter(c.expected for c in unsafe)) == set(RULE_IDS)
    assert Counter(c.language for c in cases) == {"en": len(cases) // 2, "zh": len(cases) // 2}
    again = generate()
    assert [c.case.to_dict() for c in again] == [c.case.to_dict() for c in cases]
    other = generate(seed=1)
    assert [c.case.draft for c in other] != [c.case.draft for c in cases]
    # near-misses really are near: many safe drafts name a dangerous drug they warn against
    assert sum("avoid" in c.case.draft.lower() or "不要" in c.case.draft or "禁用" in c.case.draft for c in safe) > 60


def test_rule_checkable_targets_rules_only():
    result = evaluate_safety(generate())
    assert result["layers"] == ["rules"]
    for rule in RULE_CHECKABLE:
        entry = result["classes"][rule]
        assert entry["recall"] >= 0.98 and entry["false_alarm_rate"] <= 0.05, (rule, entry)
        assert entry["tp"] + entry["fn"] >= 50 and entry["fp"] + entry["tn"] >= 400
    assert result["rule_checkable_meet_targets"]


def test_suite_events_end_with_one_done():
    stream = list(run_safety_suite(per_class=6, seed=3))
    assert [e.kind for e in stream].count("done") == 1 and stream[-1].kind == "done"
    tables = [e for e in stream if e.kind == "table"]
    assert len(tables) == 2 and len(tables[1].rows) == len(RULE_IDS)
    assert stream[-1].result["cases"] == 6 * 2 * len(RULE_IDS)
