"""How far can any learner get by imitating the safari expert from what it observes?

The learning proof asks a model that sees one turn (the view, the context, its notepad) to copy the
expert. Where the expert's decision rests on what the learner sees (a target in view or in the
notepad, declaring a find, taking the next move of the route its notepad keeps) a perfect learner
copies it exactly. Where it picks a new exploring goal, the expert rests on every cell it has seen
so far, which no single turn shows. This bench plays an *imitator*: the expert itself in the
observable situations, and where it picks a new goal a gradient-boosted classifier trained on the
expert's new-goal turns from what a learner observes (position, turn, the last move's direction,
the 10x10 view's cells). Its success and agreement
are a practical ceiling for imitation of this expert by a learner without the expert's memory,
next to the expert and greedy on the same held-out seeds.

    .venv/bin/python bench/bench_safari_imitation_ceiling.py                 # 2,000 episodes, 300 seeds/kind
    .venv/bin/python bench/bench_safari_imitation_ceiling.py --train-episodes 200 --seeds 50   # quick
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

TRAIN_SEED_START = 100_000  # the training data's seeds (``generate``)
EVAL_SEED_START = 1000  # the learning proof's held-out seeds
CELL_CLASSES = {"land": 0, "water or rock": 1, "animal": 2, "outside": 3}


def observed_features(episode: Any) -> list[int]:
    """What a learner sees on one turn, as numbers: position, turn, the last move's direction
    (from the results in its context; -1 for none) and the class of each of the 100 view cells."""
    from localqwen_safari.episode import VIEW
    from localqwen_safari.world import LAND, MOVES

    directions = list(MOVES)
    row, col = episode.position
    moves = [run.arguments.get("direction") for run in episode.last_runs if run.name == "move"]
    last = directions.index(moves[0]) if moves and moves[0] in directions else -1
    top, left = episode.view_origin()
    world = episode.world
    cells = []
    for r in range(top, top + VIEW):
        for c in range(left, left + VIEW):
            if not world.inside((r, c)):
                cells.append(CELL_CLASSES["outside"])
            elif world.animal_at((r, c)) is not None:
                cells.append(CELL_CLASSES["animal"])
            else:
                cells.append(CELL_CLASSES["land"] if world.ground((r, c)) == LAND else CELL_CLASSES["water or rock"])
    return [row, col, episode.turn, last, *cells]


HIDDEN_SITUATION = "explore (new goal)"  # the one situation whose decision a single turn does not show


def exploring_turns(episodes: int) -> tuple[list[list[int]], list[str]]:
    """The expert's new-goal turns of ``episodes`` training episodes (kinds alternating, as
    ``generate``): features and the move as a label (``up4``)."""
    from localqwen_safari.episode import Episode
    from localqwen_safari.missions import missions_in_turn
    from localqwen_safari.policies import expert

    features, labels = [], []
    for mission in missions_in_turn(episodes, TRAIN_SEED_START):
        episode = Episode.start(mission)
        while not episode.done:
            decision = expert(episode)
            if decision.situation == HIDDEN_SITUATION:
                [move] = [args for name, args in decision.calls if name == "move"]
                features.append(observed_features(episode))
                labels.append(f"{move['direction']}{move['steps']}")
            episode.play_turn(decision.calls)
    return features, labels


def imitator_policy(classifier: Any) -> Any:
    """The expert where its decision is observable; the classifier's move where it picks a new goal."""
    import numpy as np
    from localqwen_safari.policies import Decision, expert

    def imitator(episode: Any) -> Any:
        decision = expert(episode)
        if decision.situation != HIDDEN_SITUATION:
            return decision
        label = str(classifier.predict(np.array([observed_features(episode)]))[0])
        direction, steps = label[:-1], int(label[-1])
        calls = [call for call in decision.calls if call[0] != "move"]
        return Decision(f"I move {direction} {steps} steps to explore.",
                        calls + [("move", {"direction": direction, "steps": steps})], HIDDEN_SITUATION)

    return imitator


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-episodes", type=int, default=2000, help="expert episodes the classifier learns from")
    parser.add_argument("--seeds", type=int, default=300, help="held-out seeds per mission kind")
    parser.add_argument("--json", type=Path, default=Path("/tmp/safari_imitation_ceiling.json"))
    args = parser.parse_args(argv)
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
    except ImportError:
        raise SystemExit("this bench needs scikit-learn (pip install scikit-learn)") from None
    import numpy as np
    from localqwen_safari.episode import VIEW
    from localqwen_safari.evaluation import evaluate
    from localqwen_safari.missions import KINDS, mission_for_seed
    from localqwen_safari.policies import POLICIES

    started = time.monotonic()
    features, labels = exploring_turns(args.train_episodes)
    classifier = HistGradientBoostingClassifier(max_iter=300, random_state=0,
                                                categorical_features=[3, *range(4, 4 + VIEW * VIEW)])
    classifier.fit(np.array(features), np.array(labels))
    print(f"classifier: {len(labels):,} new-goal turns of {args.train_episodes} episodes, "
          f"{time.monotonic() - started:.0f} s", flush=True)
    report: dict[str, Any] = {"train_episodes": args.train_episodes, "new_goal_turns": len(labels), "runs": []}
    players = {"imitator": imitator_policy(classifier), "expert": POLICIES["expert"], "greedy": POLICIES["greedy"]}
    for kind in KINDS:
        missions = [mission_for_seed(kind, seed) for seed in range(EVAL_SEED_START, EVAL_SEED_START + args.seeds)]
        for name, policy in players.items():
            metrics = evaluate(policy, missions).metrics()
            report["runs"].append({"policy": name, "kind": kind, **metrics})
            split = "  ".join(f"{situation} {part['agreement']:.0%} ({part['share']:.0%})"
                              for situation, part in metrics["agreement_by_situation"].items())
            low, high = metrics["success_ci95"]
            print(f"{name:<9} {kind:<9} success {metrics['success_rate']:6.1%} [{low:.2f}-{high:.2f}]  "
                  f"agreement {metrics['action_agreement']:6.1%}  by situation: {split}", flush=True)
    report["seconds"] = round(time.monotonic() - started, 1)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"wrote {args.json} ({report['seconds']:.0f} s)")
    return report


if __name__ == "__main__":
    main()
