"""Expert episodes as training data, in two files beside an ``images/`` folder:

- ``dataset.jsonl``: one row per turn in the seed's shape (``image_file``, ``system_prompt``,
  ``context_text``, ``thought``, ``tool_calls``) plus episode, mission and turn;
- ``conversations.jsonl``: the same turns as Qwen3-VL chat rows for ``localqwen train``
  (``{"messages": [system, user(image + context), assistant("Thought: ..." + tool_calls)],
  "tools": [...]}``), the row format of ``localqwen.training.data``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import IO, Any

from localqwen.storage.file_lock import FileLock
from localqwen.vocabulary import events as ev
from localqwen_safari.episode import Episode, tool_schemas
from localqwen_safari.look import look_line, look_question, look_row, sighting, with_look
from localqwen_safari.missions import KINDS, Mission, missions_in_turn
from localqwen_safari.playing import play_turns
from localqwen_safari.policies import Decision, get_teacher
from localqwen_safari.prompts import SYSTEM_PROMPT, compact_thought, compact_user, system_prompt
from localqwen_safari.route import true_route_line, with_route
from localqwen_safari.world import SPECIES, Cell

DATASET_FILE = "dataset.jsonl"
CONVERSATIONS_FILE = "conversations.jsonl"
GROUNDING_FILE = "grounding.jsonl"  # the question rows alone, with ``grounding_apart`` (the grounding warm-up's)
LOCK_FILE = ".generate.lock"  # held by the run writing into a folder: two at once would mix their rows
STAGING_PREFIX = ".generating-"  # a run's files until it is done (_publish)
TRAIN_SEED_START = 100_000  # far from the evaluation seeds (1000-1299 in the README)
DAGGER_SEED_START = 300_000  # the missions a model plays for DAgger (round N: the next block), away from both


# The turns where the target is in sight or within reach: about one in six of the expert's, and
# the ones where a learner must notice the target in the image (see ``generate``'s ``oversample``).
TARGET_SITUATIONS = ("target in view", "target remembered", "declare")


def generate(out_dir: Path, episodes: int, *, kind: str = "both",
             seed_start: int = TRAIN_SEED_START, prompt: str = "full", oversample: int = 1,
             grounding: int = 0, grounding_apart: bool = False, teacher: str = "expert",
             look: bool = False, route: bool = False, openings: bool = False) -> Iterator[Any]:
    """Write ``episodes`` episodes of the ``teacher`` (``expert``, or ``sweeper``: policies.py);
    yields Progress events, returns the summary dict.
    ``prompt`` picks the conversation rows' profile (``full``: the system prompt and the tool
    schema; ``compact``: a one-line prompt, no schema, for a tiny model trained from scratch).
    ``oversample``: the training rows (``conversations.jsonl``) hold each turn of
    ``TARGET_SITUATIONS`` this many times (``dataset.jsonl`` keeps one row per turn). Most turns
    explore, so a small model learns to begin every reply as an explorer; its first word decides
    whether it goes for the target at all. ``grounding``: after each turn's row, this many question
    rows on the same view (:func:`grounding_row`: "Where is the lion?" -> "The lion is 2 rows down
    and 3 cols right." or "No lion in view.", species in view and not asked in turn), the first
    sentence of a reply that goes for the target, taught as a task of its own. ``grounding_apart``:
    those rows go to ``grounding.jsonl`` instead, for a stage of their own before the replies
    (``learning.train_on_expert``'s ``grounding_warmup_steps``). ``look``: rows for a model that
    looks before it replies (look.py): each reply's context ends with the look line a perfect look
    gives, and after it come the look's own rows (:func:`look_rows`: the current target, and on
    some views another species in view, as the look must bind the asked species to its cells and
    targets are in view on one turn in six). ``route`` (compact profile): rows for a model asked the
    route first (route.py): each compact context holds the route line a perfect route stage gives.
    ``openings`` (compact profile): each compact Thought says how far each way is open (openings.py).

    The files appear in ``out_dir`` only when the run is complete, replacing the last run's
    (:func:`_staged`); a second run into the same folder while one writes is refused."""
    system_prompt(prompt)  # an unknown profile or teacher fails here, before any file is written
    teacher_policy = get_teacher(teacher)
    if route and prompt != "compact":
        raise ValueError("route lines are written into the compact profile's rows: use prompt='compact'")
    if openings and prompt != "compact":
        raise ValueError("openings are said in the compact profile's Thoughts: use prompt='compact'")
    lines: list[str] = []

    def policy(episode: Episode) -> Decision:  # the route line is read on the state the teacher sees
        if route:
            lines.append(true_route_line(episode))
        return teacher_policy(episode)

    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    if oversample < 1:
        raise ValueError(f"oversample must be at least 1, got {oversample}")
    if grounding < 0:
        raise ValueError(f"grounding must be 0 or more, got {grounding}")
    kinds = list(KINDS) if kind == "both" else [kind]
    if any(k not in KINDS for k in kinds):
        raise ValueError(f"unknown mission kind {kind!r} (expected one of {', '.join(KINDS)} or both)")
    out_dir = Path(out_dir).expanduser()
    names = [DATASET_FILE, CONVERSATIONS_FILE] + ([GROUNDING_FILE] if grounding_apart else [])
    tracker = ev.ProgressTracker(episodes, unit="episodes", task="generate", message=f"{teacher} episodes")
    rows = training_rows = successes = 0
    with _staged(out_dir, names) as staging, \
            open(staging / DATASET_FILE, "w", encoding="utf-8") as seed_rows, \
            open(staging / CONVERSATIONS_FILE, "w", encoding="utf-8") as chat_rows, \
            open(staging / GROUNDING_FILE, "w", encoding="utf-8") if grounding_apart else nullcontext(chat_rows) \
            as question_rows:
        for index, mission in enumerate(missions_in_turn(episodes, seed_start, tuple(kinds))):
            episode = Episode.start(mission)
            for turn in play_turns(episode, policy, render=True):
                image_file = f"images/e{index:06d}_t{turn.number:02d}.png"
                assert turn.view is not None
                (staging / image_file).write_bytes(turn.view)
                copies = oversample if turn.decision.situation in TARGET_SITUATIONS else 1
                context, compact = turn.context, turn.compact_context
                if look:
                    line = look_line(turn.targets, turn.position, turn.animals_in_view)
                    context, compact = with_look(context, line), with_look(compact, line)
                if route:
                    compact = with_route(compact, lines.pop())
                write_turn(seed_rows, chat_rows, prompt=prompt, episode=index, mission=mission,
                           turn=turn.number, image_file=image_file, context=context, compact_context=compact,
                           decision=turn.decision, results=[run.result for run in turn.runs], copies=copies,
                           lead=turn.reply_lead(openings))
                rows += 1
                training_rows += copies
                if look:
                    for row in look_rows(image_file, turn.targets, turn.position, turn.animals_in_view, prompt,
                                         random.Random(f"look-{seed_start + index}-{turn.number}")):
                        chat_rows.write(json.dumps(row, ensure_ascii=False) + "\n")
                        training_rows += 1
                for question in range(grounding):
                    row = grounding_row(image_file, turn.position, turn.animals_in_view, prompt,
                                        random.Random(f"{seed_start + index}-{turn.number}-{question}"),
                                        ask_present=question % 2 == 0)
                    question_rows.write(json.dumps(row, ensure_ascii=False) + "\n")
                    training_rows += not grounding_apart
            successes += episode.success
            if index % 20 == 19 or index == episodes - 1:
                yield tracker.update(index + 1)
    return {"episodes": episodes, "rows": rows, "training_rows": training_rows, "teacher": teacher,
            "teacher_success_rate": round(successes / episodes, 4),
            "dataset": str(out_dir / DATASET_FILE), "conversations": str(out_dir / CONVERSATIONS_FILE),
            "images": str(out_dir / "images"),
            **({"grounding": str(out_dir / GROUNDING_FILE)} if grounding_apart else {})}


@contextmanager
def _staged(out_dir: Path, names: list[str]) -> Iterator[Path]:
    """A staging folder inside ``out_dir`` for one run's files, put in place (:func:`_publish`) only
    when the run's block ends normally: a run stopped or killed midway leaves the dataset that was
    there before, never a part of one or rows whose images another run overwrote. The folder's lock
    keeps one run at a time, so a staging folder left by a killed run is removed here."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(out_dir / LOCK_FILE)
    if not lock.acquire(blocking=False):
        raise ValueError(f"{out_dir}: another generate is writing there ({lock.holder() or 'a live process'}); "
                         "wait for it or pick another --output-dir")
    try:
        for stale in out_dir.glob(STAGING_PREFIX + "*"):
            shutil.rmtree(stale, ignore_errors=True)
        staging = out_dir / f"{STAGING_PREFIX}{os.getpid()}"
        (staging / "images").mkdir(parents=True)
        try:
            yield staging
            _publish(staging, out_dir, names)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        lock.release()


def _publish(staging: Path, out_dir: Path, names: list[str]) -> None:
    """Put a finished run's files in place of the last run's. The old row files go first, so a kill
    between these renames leaves no dataset (the trainer says it finds none), never rows that point
    at the other run's images; the old images folder goes with the staging folder."""
    for name in (DATASET_FILE, CONVERSATIONS_FILE, GROUNDING_FILE):
        (out_dir / name).unlink(missing_ok=True)
    if (out_dir / "images").exists():
        (out_dir / "images").rename(staging / "images.old")
    (staging / "images").rename(out_dir / "images")
    for name in names:
        (staging / name).replace(out_dir / name)


def write_turn(seed_rows: IO[str], chat_rows: IO[str], *, prompt: str, episode: int, mission: Mission, turn: int,
               image_file: str, context: str, compact_context: str, decision: Decision,
               results: list[str] | None = None, copies: int = 1, lead: str = "") -> None:
    """One turn as a line of each file: the seed's row (the full context and Thought, the
    situation the decision rested on, the results when the turn was played) and the chat row in
    the ``prompt`` profile (``compact``: the compact context, then the view, and the compact
    Thought led by ``lead``, the current target's sentence; no tool schema), ``copies`` times
    (oversampling)."""
    calls = [{"name": name, "arguments": arguments} for name, arguments in decision.calls]
    seed_row = {"episode": episode, "mission": mission.id, "kind": mission.kind, "turn": turn,
                "image_file": image_file, "system_prompt": SYSTEM_PROMPT, "context_text": context,
                "thought": decision.thought, "situation": decision.situation, "tool_calls": calls}
    if results is not None:
        seed_row["results"] = results
    seed_rows.write(json.dumps(seed_row, ensure_ascii=False) + "\n")
    if prompt == "full":
        row = conversation_row(image_file, context, decision.thought, calls, tool_schemas(), system=SYSTEM_PROMPT)
    else:
        row = compact_row(image_file, compact_context, decision, lead)
    chat_rows.write((json.dumps(row, ensure_ascii=False) + "\n") * copies)


def compact_row(image: str, context: str, decision: Decision, lead: str) -> dict[str, Any]:
    """A turn as a chat row in the compact profile: the context, then the view; the compact Thought
    led by ``lead`` (the current target's sentence); no tool schema."""
    calls = [{"name": name, "arguments": arguments} for name, arguments in decision.calls]
    return conversation_row(image, context, compact_thought(decision.thought, lead), calls, None,
                            system=system_prompt("compact"), image_last=True)


def look_rows(image: str, targets: list[str], here: Cell, in_view: list[tuple[str, Cell]], prompt: str,
              rng: random.Random) -> list[dict[str, Any]]:
    """The look's training rows on one view: one about the current target, and on about half the
    views one about another species in view, when there is one (the look is the same skill for
    any species, and every row of it is a row less of replies in a 30-minute budget: with a row
    for each target and another species on every view, 63% of the rows were looks and the replies
    went undertrained, docs/safari_learning.md "The look")."""
    if not targets:
        return []
    others = sorted({species for species, _ in in_view} - {targets[0]})
    asked = [targets[0], *([rng.choice(others)] if others and rng.random() < 0.5 else [])]
    return [look_row(image, species, sighting(species, here, in_view), prompt) for species in asked]


def grounding_row(image: str, here: Cell, in_view: list[tuple[str, Cell]], prompt: str, rng: random.Random, *,
                  ask_present: bool) -> dict[str, Any]:
    """A question row on a view: where the nearest animal of one species is, as the compact Thought
    says it ("The lion is 2 rows down and 3 cols right."), or "No lion in view.". ``ask_present``
    picks a species in view when there is one, otherwise one that is not (when every species is in
    view, one that is)."""
    present = sorted({species for species, _ in in_view})
    absent = [species for species in SPECIES if species not in present]
    pool = present if (ask_present and present) or not absent else absent
    species = rng.choice(pool)
    answer = sighting(species, here, in_view)
    return {"messages": [
        {"role": "system", "content": system_prompt(prompt)},
        {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": look_question(species)}]},
        {"role": "assistant", "content": answer},
    ]}


def conversation_row(image: str, context: str, thought: str, calls: list[dict[str, Any]],
                     tools: list[dict[str, Any]] | None, *, system: str = SYSTEM_PROMPT,
                     image_last: bool = False) -> dict[str, Any]:
    """One turn as a Qwen3-VL chat row: the tool calls are structured ``tool_calls`` (the chat
    template writes them as ``<tool_call>`` blocks), not text after the Thought. Without
    ``tools`` the row has no schema (the compact profile). ``image_last``: the view after the
    context, as the compact profile asks (prompts.compact_user)."""
    row: dict[str, Any] = {
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": compact_user(image, context) if image_last else
                [{"type": "image", "image": image}, {"type": "text", "text": context}]},
            {"role": "assistant", "content": f"Thought: {thought}",
             "tool_calls": [{"type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}
                            for call in calls]},
        ],
    }
    if tools is not None:
        row["tools"] = tools
    return row


DATA_SOURCE = "safari"
DATA_SOURCE_DESCRIPTION = "Safari expert (or sweeper) episodes (view image + context -> Thought + tool calls)"


def register_data_source(extensions) -> None:
    """Offer ``build_safari_data`` to the trainer as the data source ``safari`` (the plugin does this
    for ``localqwen train``; the learning bench for its own jobs)."""
    extensions.add_data_source(DATA_SOURCE, DATA_SOURCE_DESCRIPTION, build_safari_data)


def build_safari_data(out_dir: Path, *, episodes: int = 200, kind: str = "both",
                      seed_start: int = TRAIN_SEED_START, prompt: str = "full", oversample: int = 1,
                      grounding: int = 0, grounding_apart: bool = False, teacher: str = "expert",
                      look: bool = False, route: bool = False) -> Path:
    """The trainer data source ``safari``: the teacher's episodes -> ``conversations.jsonl`` (the train file)."""
    stream = generate(Path(out_dir), episodes, kind=kind, seed_start=seed_start, prompt=prompt,
                      oversample=oversample, grounding=grounding, grounding_apart=grounding_apart, teacher=teacher,
                      look=look, route=route)
    try:
        while True:
            next(stream)
    except StopIteration:
        pass
    return Path(out_dir) / CONVERSATIONS_FILE
