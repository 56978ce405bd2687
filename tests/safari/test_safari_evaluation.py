"""evaluate: the numbers are sane, and the expert beats the baselines on the same missions."""

from __future__ import annotations

from localqwen_safari.evaluation import evaluate, wilson_interval
from localqwen_safari.missions import mission_for_seed
from localqwen_safari.policies import POLICIES, SITUATIONS


def test_wilson_interval():
    low, high = wilson_interval(0, 300)
    assert low == 0.0 and 0.0 < high < 0.02
    low, high = wilson_interval(150, 300)
    assert 0.44 < low < 0.5 < high < 0.56
    assert wilson_interval(0, 0) == (0.0, 0.0)


def test_expert_far_above_random_and_greedy_on_the_same_missions():
    missions = [mission_for_seed("find-one", seed) for seed in range(1000, 1030)]
    scores = {name: evaluate(policy, missions).metrics() for name, policy in POLICIES.items()}
    for name, metrics in scores.items():
        assert metrics["episodes"] == 30
        for key in ("success_rate", "valid_tool_calls", "action_agreement", "thought_consistency",
                    "false_declare_rate"):
            assert 0.0 <= metrics[key] <= 1.0, (name, key, metrics[key])
        low, high = metrics["success_ci95"]
        assert low <= metrics["success_rate"] <= high
        assert 1 <= metrics["avg_turns"] <= 25
    expert, greedy, random = scores["expert"], scores["greedy"], scores["random"]
    assert greedy["success_rate"] < scores["sweeper"]["success_rate"] <= expert["success_rate"]
    assert expert["success_rate"] >= 0.6
    assert expert["success_rate"] >= greedy["success_rate"] + 0.2
    assert expert["success_rate"] >= random["success_rate"] + 0.5
    assert expert["action_agreement"] == 1.0 and expert["thought_consistency"] == 1.0
    assert expert["valid_tool_calls"] == 1.0 and expert["false_declare_rate"] == 0.0
    # agreement split by what the expert's decision rested on: every turn in exactly one situation
    for metrics in scores.values():
        split = metrics["agreement_by_situation"]
        assert set(split) <= set(SITUATIONS)
        assert abs(sum(part["share"] for part in split.values()) - 1.0) < 0.01
    assert {"declare", "target in view", "explore (noted route)", "explore (new goal)"} <= \
        set(expert["agreement_by_situation"])
    assert all(part["agreement"] == 1.0 for part in expert["agreement_by_situation"].values())
    # it wanders where the expert explores (asked on greedy's states, the expert reads greedy's
    # notepad, which never holds a goal: every exploring turn picks a new one)
    assert set(greedy["agreement_by_situation"]) <= {"declare", "finish", "target in view", "explore (new goal)"}
    assert greedy["agreement_by_situation"]["explore (new goal)"]["agreement"] < 0.5
    # the random player declares blindly and disagrees with the expert most of the time
    assert random["false_declare_rate"] > 0.5 and random["valid_tool_calls"] < 1.0
    assert random["action_agreement"] < 0.3
