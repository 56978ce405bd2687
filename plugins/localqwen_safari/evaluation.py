"""Score a policy on a set of missions: success (with a 95% Wilson interval), turns, valid tool
calls, agreement with the expert on the same states, Thought-Action consistency, false finds, and
where the missions it lost were lost (:data:`OUTCOMES`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from localqwen.vocabulary.statistics import wilson_interval
from localqwen_safari.episode import Episode
from localqwen_safari.look import look_targets
from localqwen_safari.missions import Mission
from localqwen_safari.playing import play_turns
from localqwen_safari.policies import (
    SITUATIONS,
    Decision,
    Policy,
    expert,
    thought_consistent,
    visible_animals,
)
from localqwen_safari.world import Cell, within_one

# How an episode ended, by the target it was after when it ended (the first one not yet found):
# won; that target never in view; in view only while an earlier target was sought, and never come
# back to (passed by); in view while sought but never within one cell; within one cell but never
# declared found; every target found but declare_done never called. The split shows what to
# improve: exploring (never seen), memory (passed by), walking (not reached), declaring.
OUTCOMES = ("won", "never_seen", "passed_by", "seen_not_reached", "reached_not_declared", "found_not_finished")


@dataclass
class TurnScores:
    """One episode's turn-by-turn scores against the expert asked on the same states."""

    agreements: int = 0
    consistent: int = 0
    by_situation: dict[str, list[int]] = field(default_factory=dict)  # situation -> [agreed, turns]
    seen_sought: set[str] = field(default_factory=set)  # targets in view while they were the one sought
    seen_before: set[str] = field(default_factory=set)  # later targets in view while an earlier one was sought
    reached: set[str] = field(default_factory=set)  # targets stood within one cell of while sought

    def watch(self, here: Cell, targets: list[str], in_view: list[tuple[str, Cell]]) -> None:
        """What the turn's view showed of the targets not yet found (``targets``, the sought one
        first), before the turn's calls: for :func:`outcome`."""
        for species, cell in in_view:
            if targets and species == targets[0]:
                self.seen_sought.add(species)
                if within_one(here, cell):
                    self.reached.add(species)
            elif species in targets:
                self.seen_before.add(species)

    def record(self, decision: Decision, reference: Decision) -> None:
        agreed = decision.action() == reference.action()
        self.agreements += agreed
        self.consistent += thought_consistent(decision)
        if reference.situation:
            counts = self.by_situation.setdefault(reference.situation, [0, 0])
            counts[0] += agreed
            counts[1] += 1


@dataclass
class Tally:
    episodes: int = 0
    successes: int = 0
    turns_all: int = 0
    turns_success: int = 0
    calls: int = 0
    valid_calls: int = 0
    turns_scored: int = 0
    agreements: int = 0
    consistent: int = 0
    declares: int = 0
    false_declares: int = 0
    by_situation: dict[str, list[int]] = field(default_factory=dict)  # situation -> [agreed, turns]
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))

    def add(self, episode: Episode, scores: TurnScores) -> None:
        self.episodes += 1
        self.successes += episode.success
        self.turns_all += episode.turn
        self.turns_success += episode.turn if episode.success else 0
        self.calls += episode.calls
        self.valid_calls += episode.valid_calls
        self.turns_scored += episode.turn
        self.agreements += scores.agreements
        self.consistent += scores.consistent
        self.declares += episode.declares
        self.false_declares += episode.false_declares
        self.outcomes[outcome(episode, scores)] += 1
        for situation, (agreed, turns) in scores.by_situation.items():
            counts = self.by_situation.setdefault(situation, [0, 0])
            counts[0] += agreed
            counts[1] += turns

    def metrics(self) -> dict[str, Any]:
        low, high = wilson_interval(self.successes, self.episodes)
        avg_all = self.turns_all / self.episodes if self.episodes else 0.0
        return {
            "episodes": self.episodes,
            "success_rate": _ratio(self.successes, self.episodes),
            "success_ci95": [round(low, 4), round(high, 4)],
            # turns on successful episodes (how fast it wins); all episodes when none succeeded
            "avg_turns": round(self.turns_success / self.successes if self.successes else avg_all, 3),
            "avg_turns_all": round(avg_all, 3),
            "valid_tool_calls": _ratio(self.valid_calls, self.calls),
            "action_agreement": _ratio(self.agreements, self.turns_scored),
            "thought_consistency": _ratio(self.consistent, self.turns_scored),
            "false_declare_rate": _ratio(self.false_declares, self.declares),
            # agreement split by what the teacher's decision rested on, with each situation's share of turns
            "agreement_by_situation": {
                situation: {"agreement": _ratio(*self.by_situation[situation]),
                            "share": _ratio(self.by_situation[situation][1], self.turns_scored)}
                for situation in SITUATIONS if situation in self.by_situation},
            "outcomes": dict(self.outcomes),  # episodes per OUTCOMES entry: where the lost ones were lost
        }


def outcome(episode: Episode, scores: TurnScores) -> str:
    """Which of :data:`OUTCOMES` a finished episode is, by the target it was after when it ended."""
    if episode.success:
        return "won"
    target = episode.current_target
    if target is None:
        return "found_not_finished"
    if target in scores.reached:
        return "reached_not_declared"
    if target in scores.seen_sought:
        return "seen_not_reached"
    return "passed_by" if target in scores.seen_before else "never_seen"


def evaluate(policy: Policy, missions: Iterable[Mission], *, teacher: Policy = expert) -> Tally:
    """Play every mission with ``policy`` and score it."""
    tally = Tally()
    for mission in missions:
        play_scored(tally, policy, mission, teacher=teacher)
    return tally


def play_scored(tally: Tally, policy: Policy, mission: Mission, *, teacher: Policy = expert) -> Episode:
    """Play one mission into ``tally``; the ``teacher`` (the expert, or the sweeper a model was
    trained on) is asked on each state the policy saw (teacher forcing) for the agreement score."""
    episode = Episode.start(mission)
    scores = TurnScores()
    reference = None if policy is teacher else teacher  # a scripted teacher is deterministic: it agrees with itself
    for turn in play_turns(episode, policy, teacher=reference):
        scores.watch(turn.position, turn.targets, turn.animals_in_view)  # as they were before the turn
        scores.record(turn.decision, turn.reference or turn.decision)
    tally.add(episode, scores)
    return episode


class BatchPolicy(Protocol):
    """A policy that decides many episodes' turns at once (the model policy, batched)."""

    def decide(self, episodes: list[Episode]) -> list[Decision]: ...


def evaluate_lockstep(policy: BatchPolicy, missions: Sequence[Mission], tally: Tally, *,
                      batch_size: int = 64, teacher: Policy = expert) -> Iterator[int]:
    """Play ``missions`` in groups of ``batch_size`` episodes in lockstep: every turn, the live
    episodes' decisions come from one ``policy.decide`` call (one batched generate), each is
    scored against the ``teacher`` on the state it saw, exactly like :func:`play_scored`. Yields the
    number of episodes finished after each group (for progress)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    for first in range(0, len(missions), batch_size):
        group = [Episode.start(mission) for mission in missions[first:first + batch_size]]
        scores = [TurnScores() for _ in group]
        live = list(range(len(group)))
        while live:
            references = [teacher(group[i]) for i in live]  # teacher forcing, before the calls change the state
            for i in live:
                scores[i].watch(group[i].position, look_targets(group[i]), visible_animals(group[i]))
            decisions = policy.decide([group[i] for i in live])
            for i, decision, reference in zip(live, decisions, references, strict=True):
                group[i].play_turn(decision.calls)
                scores[i].record(decision, reference)
            live = [i for i in live if not group[i].done]
        for episode, episode_scores in zip(group, scores, strict=True):
            tally.add(episode, episode_scores)
        yield len(group)


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0
