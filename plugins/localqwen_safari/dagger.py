"""Training on the learner's own states (DAgger): the model plays, the expert says what it should
have done on every state the model reached, and those rows join the expert's for the next round.

Why: trained only on the expert's episodes, the model never sees the states its own mistakes lead
to (a route on its notepad that no longer leads anywhere, a sighting it invented, a move that ran
into water), and in play those states are most of what it meets (docs/safari_learning.md,
"DAgger").

The label is the expert's decision on the model's state with one fix: the expert trusts its
notepad, and the model's notepad may hold sightings it never made. So the expert is asked with a
notepad rebuilt from what the agent really saw (every animal on a cell it has had in view, and the
route line the model wrote, which the expert follows only where it still leads to its goal), and
the label writes that notepad back when the model's differs. On the expert's own states the label
is exactly the expert's decision (tested).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

from localqwen.vocabulary import events as ev
from localqwen_safari.dataset import CONVERSATIONS_FILE, DATASET_FILE, write_turn
from localqwen_safari.episode import Episode
from localqwen_safari.evaluation import BatchPolicy
from localqwen_safari.look import look_targets
from localqwen_safari.missions import Mission
from localqwen_safari.openings import open_ways
from localqwen_safari.playing import Turn
from localqwen_safari.policies import (
    CHECKS_NOTES_BY_SIGHT,
    Decision,
    Policy,
    expert,
    notepad_route,
    notepad_sweep,
    notepad_text,
    notepad_waypoint,
    route_text,
    visible_animals,
    waypoint_text,
)
from localqwen_safari.render import render_view
from localqwen_safari.route import true_route_line, with_route


def honest_notepad(episode: Episode) -> str:
    """The notepad the agent would have if it wrote down only what it saw: every animal on a cell it
    has had in view, and the route, sweep or waypoint line it wrote itself (kept as written)."""
    seen = [(animal.species, animal.cell) for animal in episode.world.animals if animal.cell in episode.seen]
    goal, route = notepad_route(episode.notepad)
    route_line = route_text(goal, route) if goal is not None and route else ""
    waypoint = notepad_waypoint(episode.notepad)
    waypoint_line = waypoint_text(waypoint) if waypoint is not None else ""
    return " ".join(part for part in (notepad_text(seen), route_line, notepad_sweep(episode.notepad), waypoint_line)
                    if part)


def expert_label(episode: Episode, teacher: Policy = expert) -> Decision:
    """What the ``teacher`` (the expert, the sweeper or the tour) would do in the agent's state, asked with
    :func:`honest_notepad`; its calls end with the agent's notepad made right (an ``update_notepad``
    first when it differs). The compass is asked on the agent's notepad as written: it drops a note
    the view shows wrong and notes what it sees (policies.target_notes), so its label is what one
    turn shows, where the honest notepad holds cells from the whole episode."""
    if teacher in CHECKS_NOTES_BY_SIGHT:  # it checks the agent's notes itself: ask it on them as written
        return teacher(episode)
    honest = copy.deepcopy(episode)
    honest.notepad = honest_notepad(episode)
    decision = teacher(honest)
    written = next((arguments["text"] for name, arguments in decision.calls if name == "update_notepad"),
                   honest.notepad)
    calls = [call for call in decision.calls if call[0] != "update_notepad"]
    if written != episode.notepad:
        calls.insert(0, ("update_notepad", {"text": written}))
    return Decision(decision.thought, calls, decision.situation)


def labelled_turns(policy: BatchPolicy, missions: Sequence[Mission], *, batch_size: int = 64,
                   teacher: Policy = expert, route: bool = False) -> Iterator[tuple[list[tuple[int, Turn]], list[Episode]]]:
    """Play ``missions`` with ``policy`` in lockstep, ``batch_size`` at a time; for each batch, yield
    every state it met as a turn whose decision is :func:`expert_label` (asking ``teacher``), with the
    index of its mission, and the batch's finished episodes. ``route``: each turn's compact context
    holds the route line a perfect route stage gives on it (route.true_route_line)."""
    for first in range(0, len(missions), batch_size):
        group = [Episode.start(mission) for mission in missions[first:first + batch_size]]
        turns: list[tuple[int, Turn]] = []
        live = list(range(len(group)))
        while live:
            for index in live:
                episode = group[index]
                turns.append((first + index, Turn(
                    episode.turn + 1, episode.context_text(), render_view(episode), expert_label(episode, teacher), [],
                    compact_context=with_route(episode.compact_context(), true_route_line(episode) if route else ""),
                    position=episode.position,
                    animals_in_view=visible_animals(episode), targets=look_targets(episode),
                    ways_open=open_ways(episode))))
            decisions = policy.decide([group[index] for index in live])
            for index, decision in zip(live, decisions, strict=True):
                group[index].play_turn(decision.calls)
            live = [index for index in live if not group[index].done]
        yield turns, group


def collect_rows(policy: BatchPolicy, missions: Sequence[Mission], out_dir: Path, *, prompt: str = "compact",
                 batch_size: int = 64, teacher: Policy = expert) -> Generator[Any, None, dict[str, Any]]:
    """Play ``missions`` with ``policy`` in lockstep and write every state it met, labelled by
    :func:`expert_label` (asking ``teacher``), as training rows (``conversations.jsonl`` in the trainer's format and
    ``dataset.jsonl`` in the seed's, as ``generate`` writes them, images under ``images/``).
    Yields progress; returns a summary (rows, the policy's success rate on these missions)."""
    out_dir = Path(out_dir)
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    tracker = ev.ProgressTracker(len(missions), unit="episodes", task="dagger", message="the model plays")
    rows = successes = played = 0
    with open(out_dir / DATASET_FILE, "w", encoding="utf-8") as seed_rows, \
            open(out_dir / CONVERSATIONS_FILE, "w", encoding="utf-8") as chat_rows:
        for turns, group in labelled_turns(policy, missions, batch_size=batch_size, teacher=teacher):
            for index, turn in turns:
                assert turn.view is not None
                image_file = f"images/d{index:06d}_t{turn.number:02d}.png"
                (out_dir / image_file).write_bytes(turn.view)
                write_turn(seed_rows, chat_rows, prompt=prompt, episode=index, mission=missions[index],
                           turn=turn.number, image_file=image_file, context=turn.context,
                           compact_context=turn.compact_context, decision=turn.decision, lead=turn.lead)
                rows += 1
            successes += sum(episode.success for episode in group)
            played += len(group)
            yield tracker.update(played)
    return {"episodes": len(missions), "rows": rows, "policy_success_rate": round(successes / max(1, len(missions)), 4),
            "conversations": str(out_dir / CONVERSATIONS_FILE)}


def aggregate(folders: Sequence[Path], out_file: Path) -> int:
    """All the rows of ``folders`` (each holding a ``conversations.jsonl`` and its images) in one
    file, image paths made absolute (DAgger trains on every round's rows and the expert's)."""
    count = 0
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with open(out_file, "w", encoding="utf-8") as out:
        for folder in folders:
            with open(Path(folder) / CONVERSATIONS_FILE, encoding="utf-8") as rows:
                for line in rows:
                    row = json.loads(line)
                    for message in row["messages"]:
                        for part in message["content"] if isinstance(message["content"], list) else []:
                            if part.get("type") == "image" and not Path(part["image"]).is_absolute():
                                part["image"] = str((Path(folder) / part["image"]).resolve())
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    count += 1
    return count
