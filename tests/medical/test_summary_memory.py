"""Summary memory: old turns folded into a summary past the budget, each once; the profile is
always sent in full, whatever the summary kept."""

from __future__ import annotations

import pytest
from localqwen_medical.profile import Profile, update_from_turn
from localqwen_medical.summary_memory import SUMMARY_KEY, build_history, estimate_tokens


def _chat(exchanges: int) -> list[dict]:
    history = []
    for i in range(exchanges):
        history.append({"role": "user", "content": f"Day {i}: the cough is worse at night and my temperature was 38.{i} C. "
                        "I also wonder about the weather and other unrelated things in long chatty sentences here"})
        history.append({"role": "assistant", "content": f"Reply {i}: rest, drink fluids and watch the fever. " * 5})
    return history


def test_short_history_goes_verbatim():
    history = _chat(2)
    plan = build_history(history, {}, budget_tokens=2000)
    assert plan.messages == history and plan.summarised == 0


def test_long_history_is_summarised_once_and_profile_facts_are_always_sent():
    metadata: dict = {}
    profile = Profile()
    update_from_turn(profile, "I'm allergic to penicillin and I take warfarin.", 1)
    profile.save(metadata)
    history = _chat(12)
    plan = build_history(history, metadata, budget_tokens=400)
    assert 0 < plan.summarised < len(history) and plan.summary_source == "extractive"
    assert plan.messages[1:] == history[plan.summarised:]
    note = plan.messages[0]["content"]
    assert "allergies: penicillin [turn 1]" in note and "medications: warfarin [turn 1]" in note
    assert "38.0 C" in note  # a fact-bearing sentence of a summarised turn is kept
    assert sum(estimate_tokens(m["content"]) for m in plan.messages) < 700
    assert metadata[SUMMARY_KEY]["covers"] == plan.summarised

    # The next turn: what was summarised stays summarised (covers only grows), nothing is re-read.
    history += _chat(1)
    again = build_history(history, metadata, budget_tokens=400)
    assert again.summarised >= plan.summarised and again.summary.startswith(plan.summary)


def test_the_last_exchanges_are_kept_even_over_budget():
    history = _chat(3)
    plan = build_history(history, {}, budget_tokens=64, keep_recent=4)
    assert plan.messages[-4:] == history[-4:]
    with pytest.raises(ValueError, match="at least 64"):
        build_history(history, {}, budget_tokens=10)


def test_chinese_turns_are_counted_and_summarised():
    history = [{"role": "user", "content": "我咳嗽三天了，昨晚发烧38.5度，吃了布洛芬。" * 6},
               {"role": "assistant", "content": "建议多喝水，注意休息。" * 10}] * 4
    plan = build_history(history, {}, budget_tokens=300)
    assert plan.summarised > 0 and "38.5" in plan.messages[0]["content"]
