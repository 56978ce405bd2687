"""Play an episode turn by turn with any policy, keeping what each turn saw and did."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from localqwen.runtime.tool_loop import ToolRun
from localqwen_safari.episode import Episode
from localqwen_safari.look import look_targets, target_sentence
from localqwen_safari.openings import open_ways, opening_sentence, with_opening
from localqwen_safari.policies import Decision, Policy, visible_animals
from localqwen_safari.render import render_view
from localqwen_safari.world import Cell


@dataclass
class Turn:
    number: int  # 1-based
    context: str  # the text the policy read
    view: bytes | None  # the view image it saw (when rendering)
    decision: Decision
    runs: list[ToolRun]
    reference: Decision | None = None  # what the teacher (the expert) would have done in the same state
    compact_context: str = ""  # the context in the compact prompt profile (Episode.compact_context)
    position: Cell = (0, 0)  # where the agent stood when it saw the view
    animals_in_view: list[tuple[str, Cell]] = field(default_factory=list)  # what the view showed
    targets: list[str] = field(default_factory=list)  # the targets not yet found when it saw the view
    ways_open: dict[str, int] = field(default_factory=dict)  # steps open each way in the view (openings.open_ways)

    @property
    def lead(self) -> str:
        """The compact Thought's first sentence on this turn's view (look.target_sentence)."""
        return target_sentence(self.targets, self.position, self.animals_in_view)

    @property
    def opening(self) -> str:
        """How far the view showed open each way, as a Thought says it ("Open: up 3, down 0, ...")."""
        return opening_sentence(self.ways_open) if self.ways_open else ""

    def reply_lead(self, openings: bool = False) -> str:
        """What the compact Thought begins with: :attr:`lead`, and with ``openings`` the openings after it."""
        return with_opening(self.lead, self.opening) if openings else self.lead


def play_turns(episode: Episode, policy: Policy, *, render: bool = False,
               teacher: Policy | None = None) -> Iterator[Turn]:
    """Yield each turn after it ran, until the episode is over. ``teacher`` is asked on the very
    state the policy saw (teacher forcing), before the policy's calls change it."""
    while not episode.done:
        context, compact = episode.context_text(), episode.compact_context()
        position, animals, targets = episode.position, visible_animals(episode), look_targets(episode)
        ways_open = open_ways(episode)
        view = render_view(episode) if render else None
        reference = teacher(episode) if teacher is not None else None
        decision = policy(episode)
        runs = episode.play_turn(decision.calls)
        yield Turn(episode.turn, context, view, decision, runs, reference, compact, position, animals, targets,
                   ways_open)
