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


def _open_map(animals: dict[tuple[int, int], str], size: int = 20) -> tuple[str, ...]:
    rows = [["."] * size for _ in range(size)]
    for (r, c), letter in animals.items():
        rows[r][c] = letter
    return tuple("".join(row) for row in rows)


def _scripted(turns: dict[str, list[list[tuple[str, dict]]]]):
    """A policy that plays each mission's listed calls turn by turn, then waits (a wasted turn)."""
    from localqwen_safari.policies import Decision

    def play(episode):
        script = turns[episode.mission.id]
        return Decision("scripted", list(script[episode.turn]) if episode.turn < len(script) else [])

    return play


def test_each_lost_mission_is_put_where_it_was_lost_the_same_one_by_one_and_in_lockstep():
    from localqwen_safari.evaluation import OUTCOMES, Tally, evaluate_lockstep
    from localqwen_safari.missions import Mission

    def one(mission_id, animals, kind="find-one", targets=("zebra",)):
        return Mission(mission_id, kind, targets, map=_open_map(animals), start=(10, 10), max_turns=4)

    missions = [
        one("won", {(10, 11): "Z"}),
        one("never_seen", {(0, 0): "Z"}),  # out of the 10x10 view the whole time
        one("seen_not_reached", {(13, 13): "Z"}),  # in view, never walked to
        one("reached_not_declared", {(11, 11): "Z"}),  # beside it, never declared
        one("found_not_finished", {(10, 11): "Z"}),  # declared, never done
        # lion then zebra: the zebra in view at the start, the lion found to the left, the zebra
        # then out of view and never come back to
        one("passed_by", {(13, 13): "Z", (11, 5): "L"}, kind="find-two", targets=("lion", "zebra")),
    ]
    found, done = ("declare_found", {"species": "zebra"}), ("declare_done", {})
    policy = _scripted({"won": [[found], [done]], "never_seen": [], "seen_not_reached": [], "reached_not_declared": [],
                        "found_not_finished": [[found]],
                        "passed_by": [[("move", {"direction": "left", "steps": 4})],
                                      [("declare_found", {"species": "lion"})]]})
    expected = {name: 1 for name in OUTCOMES}
    metrics = evaluate(policy, missions).metrics()
    assert metrics["outcomes"] == expected and metrics["success_rate"] == round(1 / 6, 4)

    class Batched:
        def decide(self, episodes):
            return [policy(episode) for episode in episodes]

    tally = Tally()
    assert sum(evaluate_lockstep(Batched(), missions, tally, batch_size=4)) == 6
    assert tally.metrics()["outcomes"] == expected


def test_the_outcomes_add_up_and_the_compass_loses_mostly_by_not_seeing():
    from localqwen_safari.policies import compass

    missions = [mission_for_seed("find-two", seed) for seed in range(1000, 1040)]
    outcomes = evaluate(compass, missions, teacher=compass).metrics()["outcomes"]
    assert sum(outcomes.values()) == 40
    lost = 40 - outcomes["won"]
    assert outcomes["never_seen"] + outcomes["passed_by"] >= lost / 2  # exploring, not walking, loses most
