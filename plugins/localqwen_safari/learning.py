"""Training a safari agent from scratch: the tiny Qwen3-VL the learning proof uses, and one training
job through the trainer's runner with the ``safari`` data source (what ``localqwen train`` runs).

bench/bench_safari_learning.py runs the full proof; tests/safari runs a short one with the same code.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen_safari.dataset import DAGGER_SEED_START

CORPUS_SEED_START = 50_000  # neither training (100,000+) nor evaluation (1000-1299) seeds


def tokenizer_corpus(episodes: int = 60, teacher: str = "expert", openings: bool = False) -> list[str]:
    """Safari text in the compact profile (each turn's system prompt, context, Thought and tool calls
    under their roles, as the chat template writes them), so the tiny model's BPE tokenizer spends
    its vocabulary on this task (``openings``: the Thoughts say how far each way is open,
    openings.py). The system prompt and the role names come once per turn, as often as in the rows:
    in the corpus once, they stayed in single letters and took 44 of a row's ~318 tokens (now 22)."""
    from localqwen_safari.episode import Episode
    from localqwen_safari.missions import missions_in_turn
    from localqwen_safari.playing import play_turns
    from localqwen_safari.policies import get_teacher
    from localqwen_safari.prompts import COMPACT_SYSTEM_PROMPT, compact_thought

    lines = []
    for mission in missions_in_turn(episodes, CORPUS_SEED_START):
        episode = Episode.start(mission)
        for turn in play_turns(episode, get_teacher(teacher)):
            lines.append("system\n" + COMPACT_SYSTEM_PROMPT)
            lines.append("user\n" + turn.compact_context)
            lines.append("assistant\nThought: " + compact_thought(turn.decision.thought, turn.reply_lead(openings)))
            lines += ['<tool_call>\n{"name": "' + name + '", "arguments": ' + json.dumps(arguments) + "}\n</tool_call>"
                      for name, arguments in turn.decision.calls]
    return lines


def build_tiny_model(out: Path, *, hidden: int = 96, layers: int = 3, vision_depth: int = 2,
                     corpus_episodes: int = 60, seed: int = 0, teacher: str = "expert", merge: int = 2,
                     openings: bool = False) -> Path:
    """A random-weight Qwen3-VL from a config with a safari-trained tokenizer. ``image_size`` 160:
    the 160x160 view is never resized, so each 16 px patch is one cell; ``merge`` patches each way
    make one image token (2: Qwen3-VL's own 2x2, 25 tokens; 1: a token per cell, 100 tokens).
    ``teacher``: whose turns the tokenizer's corpus holds (the one it will learn from), ``openings``:
    with the Thoughts saying how far each way is open (openings.py)."""
    from localqwen.testing.tiny_models import build_tiny_qwen3_vl

    heads = max(1, hidden // 32)
    # RoPE base 10,000 (Qwen's 5,000,000 is for 256K-token contexts): with head_dim 32 the image's
    # rows and cols get only five frequencies each, and a low base keeps them fast enough to tell
    # 5 token rows apart (reading an animal's place: 80% against 70% after 1,800 steps).
    half_rotary, third = 16, 5
    return build_tiny_qwen3_vl(
        out, hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers, head_dim=32,
        num_attention_heads=heads, num_key_value_heads=1, vocab_size=1024, corpus=tokenizer_corpus(corpus_episodes, teacher, openings),
        image_size=160, seed=seed,
        rope_parameters={"rope_type": "default", "rope_theta": 10_000.0,
                         "mrope_section": [half_rotary - 2 * third, third, third], "mrope_interleaved": True},
        vision_config={"depth": vision_depth, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2,
                       "spatial_merge_size": merge})


def count_parameters(path: Path) -> int:
    """Every weight in the folder's safetensors files, embeddings included."""
    from safetensors import safe_open

    total = 0
    for file in Path(path).glob("*.safetensors"):
        with safe_open(str(file), "pt") as weights:
            for name in weights.keys():  # noqa: SIM118 (safe_open is not iterable)
                size = 1
                for dim in weights.get_slice(name).get_shape():
                    size *= dim
                total += size
    return total


@dataclass
class TrainingRun:
    model: Path  # the trained model folder (full) or adapter folder (LoRA)
    seconds: float
    summary: str
    steps: int
    stopped_by_budget: bool
    warmup: Any = None  # the vision warm-up's WarmupResult, when there was one
    grounding_warmup: Any = None  # the grounding stage's own TrainingRun, when there was one


def train_on_expert(model: Path, out: Path, *, episodes: int, epochs: float, batch_size: int = 16,
                    learning_rate: float = 2e-3, max_steps: int = -1, minutes: float | None = None,
                    prompt: str = "compact", method: str = "full", method_options: dict[str, Any] | None = None,
                    max_length: int = 400, seed: int = 0, lr_scheduler: str = "constant_with_warmup",
                    vision_warmup_steps: int = 0,
                    on_warmup_step: Callable[[int, int, float], None] | None = None,
                    data_file: Path | None = None, on_event: Callable[[Any], None] | None = None,
                    oversample: int = 1, grounding: int = 0, grounding_warmup_steps: int = 0,
                    teacher: str = "expert", look: bool = False) -> TrainingRun:
    """One job of the trainer's runner on ``episodes`` episodes of the ``teacher`` (policies.TEACHERS:
    the expert by default, or the sweeper) from the ``safari`` data
    source. ``minutes`` is a wall-clock budget: when it runs out the job stops after the current
    step, keeps a checkpoint, and that checkpoint is the result (so the learning rate is constant
    after warmup by default: the budget may cut the run anywhere; a decaying ``lr_scheduler`` such
    as "cosine" pays off when ``max_steps`` is what the budget allows). ``vision_warmup_steps``: a
    from-scratch model first gets that many steps of vision warm-up (vision_warmup.py) on the same
    episodes' views, and its vision tower is then frozen for the replies' training; the warm-up's
    time comes out of ``minutes``. ``data_file``: train on these conversation rows (a DAgger round's
    mix) instead of ``episodes`` fresh expert episodes. ``on_event``: gets the job's events as it
    runs (progress with loss and ETA), as ``localqwen train`` shows them. ``oversample`` and
    ``grounding``: the data source's (target turns repeated, question rows per turn; dataset.generate).
    ``grounding_warmup_steps``: after the vision warm-up, that many steps on the question rows alone
    ("Where is the lion?" -> "The lion is 2 rows down and 3 cols right." / "No lion in view.", two
    per turn of the same episodes, one about a species in view), then the replies: the decoder learns
    to bind the asked species to the image on a task where it is asked every row, not in one reply
    of six; its time comes out of ``minutes`` too. ``look``: rows for a model that looks before it
    replies (look.py; play it with ``ModelPolicy(look=True)``)."""
    from localqwen.plugin_api.extensions import Extensions
    from localqwen.training.config import parse_job_config
    from localqwen.training.job_progress import StopFlag
    from localqwen.training.runner import run_job
    from localqwen_safari.dataset import register_data_source

    started = time.monotonic()
    warmup = grounding_stage = None
    if vision_warmup_steps > 0:
        from localqwen_safari.vision_warmup import warm_up_vision

        warmup = warm_up_vision(model, Path(out) / "vision-warmup", episodes=episodes, steps=vision_warmup_steps,
                                seed=seed, on_step=on_warmup_step)
        model = warmup.model
        method_options = {**(method_options or {}), "freeze_vision_tower": True}
        if minutes is not None:
            minutes = max(0.1, minutes - warmup.seconds / 60)
    if grounding_warmup_steps > 0:
        from localqwen_safari.dataset import GROUNDING_FILE, build_safari_data

        if data_file is not None:
            raise ValueError("the grounding warm-up makes its rows from fresh expert episodes; with data_file, "
                             "train the warmed model instead")
        if grounding:
            raise ValueError("grounding rows go either into the replies' rows (grounding) or into a warm-up "
                             "stage of their own (grounding_warmup_steps), not both")
        stage_started = time.monotonic()
        data_dir = Path(out) / "data"
        data_file = build_safari_data(data_dir, episodes=episodes, prompt=prompt, oversample=oversample, grounding=2,
                                      grounding_apart=True, teacher=teacher)
        grounding_stage = train_on_expert(
            model, Path(out) / "grounding-warmup", episodes=episodes, epochs=100, batch_size=batch_size,
            learning_rate=learning_rate, max_steps=grounding_warmup_steps, minutes=minutes, prompt=prompt,
            method=method, method_options=method_options, max_length=max_length, seed=seed, lr_scheduler="cosine",
            data_file=data_dir / GROUNDING_FILE, on_event=on_event)
        model = grounding_stage.model
        if minutes is not None:
            minutes = max(0.1, minutes - (time.monotonic() - stage_started) / 60)
    # Random batches ("pad"), not length buckets: the rows are templated, and buckets by their JSON
    # character count held one species asked per batch, so the from-scratch model learned each
    # batch's answer instead of reading the prompt. Buckets by token count (the trainer's now) are
    # as mixed as random ones here (bench/bench_training_length_buckets.py), but the rows' lengths
    # hardly differ, so they would save little padding; random batches are what was measured.
    extensions = Extensions.builtin().fork("safari")  # what the workbench hands `localqwen train`
    register_data_source(extensions)
    config = parse_job_config({
        "output_dir": str(out), "model": {"path": str(model), "task": "vision"},
        "data": {"train": str(data_file)} if data_file is not None else
                {"source": {"name": "safari", "options": {"episodes": episodes, "prompt": prompt,
                                                         "oversample": oversample, "grounding": grounding,
                                                         "teacher": teacher, "look": look}}},
        "method": {"name": method, "options": method_options or {}}, "tracking": {"swanlab": "off"},
        "training": {"epochs": epochs, "max_steps": max_steps, "batch_size": batch_size,
                     "learning_rate": learning_rate, "lr_scheduler": lr_scheduler, "warmup_ratio": 0.03,
                     "max_length": max_length, "batching": "pad", "logging_steps": 10, "save_steps": 10**6,
                     "seed": seed, "precision": "fp32" if method == "full" else "auto"},
    })
    stop = StopFlag()
    timer = None
    if minutes is not None:
        timer = threading.Timer(minutes * 60, stop.request, args=(f"the {minutes:g}-minute budget ran out",))
        timer.daemon = True
        timer.start()
    try:
        done = run_job(config, data_sources=extensions.data_sources, stop=stop, echo=on_event)
    finally:
        if timer is not None:
            timer.cancel()
    seconds = round(time.monotonic() - started, 1)
    result = done.result or {}
    if done.status == "cancelled" and stop.requested and result.get("checkpoint"):
        checkpoint = Path(result["checkpoint"])
        if method == "full":  # a full model's checkpoint loads as a model once its processor is beside it
            from transformers import AutoProcessor

            AutoProcessor.from_pretrained(model).save_pretrained(checkpoint)
        return TrainingRun(checkpoint, seconds, done.summary, int(result.get("step", 0)), True, warmup,
                           grounding_stage)
    if done.status != "ok":
        raise RuntimeError(f"the safari training job failed: {done.summary}")
    return TrainingRun(Path(result["final"]), seconds, done.summary, int(result.get("step", 0)), False, warmup,
                       grounding_stage)


def dagger_round(model: Path, data_folders: list[Path], out: Path, *, episodes: int, steps: int,
                 learning_rate: float = 1e-3, seed_start: int = DAGGER_SEED_START, prompt: str = "compact",
                 max_new_tokens: int = 160, batch_size: int = 8, minutes: float | None = None,
                 on_progress: Callable[[Any], None] | None = None,
                 teacher: str = "expert") -> tuple[TrainingRun, dict[str, Any]]:
    """One round of training on the model's own states (dagger.py): ``model`` plays ``episodes``
    missions (seeds from ``seed_start``, away from the expert's and the evaluation's), the
    ``teacher`` (the one whose rows it was trained on) labels every state it met, and training goes
    on from ``model`` for ``steps`` steps on those rows together with every folder of
    ``data_folders`` (the teacher's data, earlier rounds' rows), the vision tower frozen;
    ``minutes`` bounds the whole round (playing, then training). ``on_progress`` gets the playing's
    progress and then the training job's events. Returns the run and the rows' summary; this
    round's rows are in out/rows."""
    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen_safari.dagger import aggregate, collect_rows
    from localqwen_safari.missions import missions_in_turn
    from localqwen_safari.model_policy import ModelPolicy
    from localqwen_safari.policies import get_teacher

    labeller = get_teacher(teacher)  # an unknown name fails before the model plays
    started = time.monotonic()
    missions = missions_in_turn(episodes, seed_start)
    engine = TransformersEngine(model)
    try:
        policy = ModelPolicy(engine, out / "views", settings=GenerationSettings(max_new_tokens=max_new_tokens),
                             prompt=prompt, keep_replies=False)
        stream = collect_rows(policy, missions, out / "rows", prompt=prompt, teacher=labeller)
        while True:
            try:
                event = next(stream)
            except StopIteration as done:
                summary = done.value
                break
            if on_progress is not None:
                on_progress(event)
    finally:
        engine.close()
    summary["mixed_rows"] = aggregate([*data_folders, out / "rows"], out / "mix.jsonl")
    if minutes is not None:  # ``minutes`` is the round's: playing came out of it
        minutes = max(0.1, minutes - (time.monotonic() - started) / 60)
    run = train_on_expert(model, out / "run", episodes=episodes, epochs=100, batch_size=batch_size,
                          learning_rate=learning_rate, max_steps=steps, minutes=minutes, prompt=prompt,
                          method_options={"freeze_vision_tower": True}, lr_scheduler="cosine",
                          data_file=out / "mix.jsonl", on_event=on_progress)
    return run, summary


def says_place(thought: str, target: str | None, here: tuple[int, int], in_view: list[tuple[str, tuple[int, int]]]) -> bool | None:
    """Whether ``thought`` gives the place of ``target`` (seen from ``here`` with ``in_view``) exactly
    as the compact Thought words it ("The lion is 2 rows down and 3 cols right."); None where no
    target is in view."""
    from localqwen_safari.look import sighting

    if not target:
        return None
    truth = sighting(target, here, in_view)
    return truth in thought if truth.startswith("The ") else None


def decisions_on_expert_states(model: Path, *, seed_start: int = 900_000, per_situation: int = 40,
                               prompt: str = "compact", max_new_tokens: int = 160,
                               max_episodes: int = 400, teacher: str = "expert",
                               look: bool = False, route: bool = False) -> dict[str, dict[str, float]]:
    """The model's own replies (generated, not teacher-forced) on states of the expert's episodes
    (seeds from ``seed_start``, both kinds), up to ``per_situation`` states for each situation of
    the expert's decision: per situation, the share whose action equals the expert's
    (``agreement``) and, where the target is in sight or in reach, the share whose Thought says
    where it is ("The lion is ...", ``noticed``: the compact Thought begins every turn with that or
    "No lion in view.", and a remembered target's place comes after the second), and where the
    target is in view, the share that says its place exactly (``placed``, out of the states with the
    target in view: the place must be read off the image). Between the
    teacher-forced check (which hands the model its Thought up to "I move", so it never has to
    notice the target) and play (where its own
    earlier turns lead it off the expert's states), this shows whether the first decision, go for
    the target or explore, is made from the view. ``teacher``: whose episodes and decisions (the
    expert's, or the sweeper's for a model trained on them). ``look``: the model looks first (look.py);
    ``route``: it is asked the route first (route.py). Where its replies say how far each way is open
    (openings.py), ``opened`` is the share of the states whose openings they say exactly."""
    import copy
    import operator
    import tempfile

    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen_safari.dataset import TARGET_SITUATIONS
    from localqwen_safari.episode import Episode
    from localqwen_safari.missions import missions_in_turn
    from localqwen_safari.model_policy import ModelPolicy
    from localqwen_safari.openings import open_ways, said_opening
    from localqwen_safari.policies import SITUATIONS_MET, Decision, get_teacher, visible_animals

    policy_of_teacher = get_teacher(teacher)
    states: dict[str, list[tuple[Episode, Decision]]] = {}
    for mission in missions_in_turn(max_episodes, seed_start):
        episode = Episode.start(mission)
        while not episode.done:
            decision = policy_of_teacher(episode)
            bucket = states.setdefault(decision.situation, [])
            if len(bucket) < per_situation:
                bucket.append((copy.deepcopy(episode), decision))
            episode.play_turn(decision.calls)
        if all(len(states.get(situation, ())) >= per_situation for situation in SITUATIONS_MET[teacher]):
            break
    report: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="safari-decisions-") as views, TransformersEngine(model) as engine:
        policy = ModelPolicy(engine, Path(views), settings=GenerationSettings(max_new_tokens=max_new_tokens),
                             prompt=prompt, keep_replies=False, look=look, route=route)
        for situation, items in sorted(states.items()):
            replies = policy.decide([episode for episode, _ in items])
            agreed = sum(reply.action() == decision.action() for reply, (_, decision) in zip(replies, items, strict=True))
            scores = {"states": len(items), "agreement": round(agreed / len(items), 4)}
            opened = [said_opening(reply.thought) for reply in replies]
            if any(opening is not None for opening in opened):  # a model taught to say its openings
                truths = [open_ways(episode) for episode, _ in items]
                scores["opened"] = round(sum(map(operator.eq, opened, truths)) / len(items), 4)
            if situation in TARGET_SITUATIONS:
                noticed = sum(f"The {episode.current_target} is" in reply.thought
                              for reply, (episode, _) in zip(replies, items, strict=True))
                scores["noticed"] = round(noticed / len(items), 4)
                placed = [says_place(reply.thought, episode.current_target, episode.position, visible_animals(episode))
                          for reply, (episode, _) in zip(replies, items, strict=True)]
                if any(verdict is not None for verdict in placed):
                    scores["placed"] = round(placed.count(True) / (len(placed) - placed.count(None)), 4)
            report[situation] = scores
    return report


@dataclass
class MoveAccuracy:
    rows: int  # replies with a stated move ("I move <direction> <n> steps")
    direction: float  # share whose direction the model predicts, teacher-forced on the reply before it
    move: float  # share whose direction and step count it predicts
    majority: float  # share of the commonest direction among these rows: what always saying it scores
    tokens: float  # share of all their reply tokens predicted right, teacher-forced (the reply's form and copying)
    # the stated direction's accuracy apart for each situation of the expert's decision (target in
    # view, noted route, ...; dataset.jsonl's "situation"), each with its rows and commonest direction's share
    by_situation: dict[str, dict[str, float]] = field(default_factory=dict)


def move_accuracy(model: Path, data: Path, *, limit: int = 200) -> MoveAccuracy:
    """How often the model, given a row's prompt and its reply up to "I move", predicts the move the
    expert stated (teacher-forced: every earlier reply token is the expert's). It isolates the
    decision from the reply's form, which free generation needs too, so a short training run's
    learning shows here before it shows in play. ``data``: a folder ``generate`` wrote
    (``conversations.jsonl`` and its images); the first ``limit`` rows with a move are scored."""
    from collections import Counter

    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from localqwen.training.collator import ChatCollator

    processor = AutoProcessor.from_pretrained(model)
    network = AutoModelForImageTextToText.from_pretrained(model).eval()
    collator = ChatCollator(processor)
    tokenizer = processor.tokenizer
    marker = tokenizer.encode(" move", add_special_tokens=False)
    directions: Counter[str] = Counter()
    right_direction = right_move = rows = 0
    token_hits = token_count = 0
    situations: dict[str, Counter[str]] = {}  # situation -> directions stated
    situation_right: Counter[str] = Counter()  # situation -> rows whose direction the model predicts
    seed_rows = Path(data) / "dataset.jsonl"  # the same turns in the same order, with the situation
    with (Path(data) / "conversations.jsonl").open(encoding="utf-8") as lines, \
            (seed_rows.open(encoding="utf-8") if seed_rows.exists() else open(os.devnull, encoding="utf-8")) as seeds:
        for line in lines:
            row = json.loads(line)
            situation = json.loads(seeds.readline() or "{}").get("situation", "")
            reply = row["messages"][-1]["content"]
            stated = reply.split("I move ", 1)[1].split()[:2] if "I move " in reply else []
            if len(stated) < 2:
                continue
            for message in row["messages"]:  # image paths are relative to the data folder
                for part in message["content"] if isinstance(message["content"], list) else []:
                    if part.get("type") == "image":
                        part["image"] = str(Path(data) / part["image"])
            batch = collator([row])
            ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
            start = next((i + len(marker) for i in range(len(ids)) if labels[i] != -100
                          and ids[i:i + len(marker)] == marker), None)
            if start is None:
                continue
            direction = tokenizer.encode(" " + stated[0], add_special_tokens=False)
            steps = tokenizer.encode(" " + stated[1], add_special_tokens=False)
            span = len(direction) + len(steps)
            if ids[start:start + span] != direction + steps:
                continue  # the reply is tokenised across the words: not scored
            with torch.no_grad():
                logits = network(**{k: v for k, v in batch.items() if k != "labels"}).logits[0]
            predicted = logits[start - 1:start - 1 + span].argmax(-1).tolist()
            guesses = logits[:-1].argmax(-1).tolist()  # position i predicts token i + 1
            scored = [i for i in range(1, len(ids)) if labels[i] != -100]
            token_hits += sum(guesses[i - 1] == ids[i] for i in scored)
            token_count += len(scored)
            rows += 1
            directions[stated[0]] += 1
            right_direction += predicted[:len(direction)] == direction
            right_move += predicted == direction + steps
            if situation:
                tally = situations.setdefault(situation, Counter())
                tally[stated[0]] += 1
                situation_right[situation] += predicted[:len(direction)] == direction
            if rows >= limit:
                break
    if not rows:
        raise ValueError(f"no reply with a stated move in {data}")
    by_situation = {}
    for situation, tally in situations.items():
        count = sum(tally.values())
        by_situation[situation] = {"rows": count, "direction": situation_right[situation] / count, "majority": max(tally.values()) / count}
    return MoveAccuracy(rows, right_direction / rows, right_move / rows, max(directions.values()) / rows,
                        token_hits / max(1, token_count), by_situation)


def look_accuracy(model: Path, data: Path, *, limit: int = 600, batch: int = 50) -> dict[str, float]:
    """How often the model's look (look.py) answers exactly as a perfect look would, on the look rows
    of a folder ``generate(look=True)`` wrote (the first ``limit``): apart for views where the asked
    species is in view (``in_view``: the place must be right too) and where it is not."""
    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen.training.data import read_rows
    from localqwen_safari.model_policy import LOOK_TOKENS

    asked: list[tuple[list[dict[str, Any]], str]] = []
    for row in read_rows(Path(data) / "conversations.jsonl"):  # image paths resolved against the folder
        messages = row["messages"]
        first = messages[1]["content"][0]
        if first.get("type") == "text" and first["text"].startswith("Where is the "):  # look rows ask first
            asked.append((messages[:-1], messages[-1]["content"]))
            if len(asked) >= limit:
                break
    if not asked:
        raise ValueError(f"no look rows in {data} (written with look=True?)")
    right = {True: 0, False: 0}
    count = {True: 0, False: 0}
    settings = GenerationSettings(max_new_tokens=LOOK_TOKENS)
    with TransformersEngine(model) as engine:
        for first in range(0, len(asked), batch):
            group = asked[first:first + batch]
            results = engine.chat_batch([messages for messages, _ in group], settings=settings)
            for (_, answer), result in zip(group, results, strict=True):
                present = not answer.startswith("No ")
                count[present] += 1
                right[present] += result.text.strip() == answer
    return {"rows": len(asked), "in_view_rows": count[True],
            "in_view": round(right[True] / max(1, count[True]), 4),
            "not_in_view": round(right[False] / max(1, count[False]), 4)}
