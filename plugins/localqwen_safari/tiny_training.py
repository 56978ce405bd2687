"""Training the tiny safari model: the replies, plus dense lessons on where the target is.

Trained on the replies alone, a from-scratch Qwen3-VL of under a million weights never learned to
say whether the target is in its view (docs/safari_learning.md, "Marking the target"): one reply in six has
the target in view, and its first word ("The" or "No") is the only place the replies teach it. The
compact profile puts the view after the context, whose last line names the species to find now,
so every cell's image token can read the species asked. Auxiliary lessons give the decoder the
lesson in dense form, as the vision warm-up gave the vision tower its cells:

- **marking**: after the first decoder layer, every image token says whether its cell holds the
  current target (100 labels a row, on every row);
- **readout**: at every position of the Thought's first sentence, after the second layer, the
  hidden state says which view row and col hold the nearest target (rows with the target in view);
  off unless asked for (``readout_weight``);
- **pointer** (pointer.py): at the same positions, one second-layer attention head looks at the
  nearest target's image token, and its output may be asked for that token's row and col; off
  unless asked for (``pointer_weight``, ``pointer_place_weight``:
  docs/safari_learning.md, "The pointer lesson").

Their heads are thrown away; the model folder written is an ordinary Qwen3-VL that plays through
the same ``ModelPolicy`` as any other. The vision tower stays frozen (it is warmed up first,
vision_warmup.py), so each view's image features are computed once before the first step instead
of on every step. The rows are the ``safari`` data source's compact rows (dataset.write_turn),
built here in memory with their labels. DAgger rounds (:func:`own_rows`) add rows of the states the
model reaches itself, labelled by the teacher: it walks into water and declares where no target is,
states the teacher's episodes never show.
"""

from __future__ import annotations

import io
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen_safari.dataset import DAGGER_SEED_START
from localqwen_safari.episode import VIEW, VIEW_BEFORE
from localqwen_safari.world import Cell

if TYPE_CHECKING:
    from localqwen_safari.playing import Turn
    from localqwen_safari.policies import Decision

POINTER_LAYER, POINTER_HEAD = 1, 0  # the second decoder layer: its input is the first's, which marks
MARK_POSITIVE_WEIGHT = 20.0  # a target covers one cell of a hundred, on one row in six


@dataclass
class TinyRow:
    view: bytes  # the view PNG
    messages: list[dict[str, Any]]  # the compact conversation row (dataset.conversation_row)
    marks: list[float]  # per view cell, row by row: 1.0 where the current target stands (empty: no marking lesson)
    nearest: tuple[int, int] | None  # view (row, col) of the nearest target in view
    situation: str = ""  # what the teacher's decision rested on (policies.SITUATIONS)
    shut: bool = False  # an exploring turn with the waypoint's way shut beside the agent (:func:`shut_ahead`)
    # the frozen vision tower's output on the view (fp16), and which tower gave it (tower_fingerprint)
    features: Any = None
    deepstack: Any = None
    tower: str = ""


@dataclass
class TinyRun:
    model: Path
    steps: int
    seconds: float
    stopped_by_budget: bool
    rows: int
    # the last 100 steps' means: replies, marking, readout, pointer, pointer_place, route
    losses: dict[str, float] = field(default_factory=dict)
    # seconds a step took in the training loop (rows and model loading not counted): the machine's
    # speed that day, which sets how many steps the minutes buy (docs/safari_learning.md)
    step_seconds: float = 0.0


def target_marks(target: str | None, here: Cell, in_view: list[tuple[str, Cell]]) -> tuple[list[float], tuple[int, int] | None]:
    """Per view cell whether it holds ``target``, and the view cell of the nearest one (look.nearest:
    the one the Thought's first sentence names)."""
    from localqwen_safari.look import nearest

    marks = [0.0] * (VIEW * VIEW)
    top, left = here[0] - VIEW_BEFORE, here[1] - VIEW_BEFORE
    for species, (r, c) in in_view:
        if species == target:
            marks[(r - top) * VIEW + (c - left)] = 1.0
    cell = nearest(target, here, in_view) if target else None
    return marks, None if cell is None else (cell[0] - top, cell[1] - left)


def tiny_row(turn: Turn, route: str = "", openings: bool = False) -> TinyRow:
    """A turn (its view rendered) as a compact row with its labels: the data source's row, in memory.
    ``route``: the route line its context holds (route.with_route; for a model asked the route first).
    ``openings``: its Thought says how far each way is open (openings.py)."""
    from localqwen_safari.dataset import compact_row
    from localqwen_safari.route import with_route

    assert turn.view is not None
    row = compact_row("view.png", with_route(turn.compact_context, route), turn.decision,
                      turn.reply_lead(openings))
    marks, nearest = target_marks(turn.targets[0] if turn.targets else None, turn.position, turn.animals_in_view)
    return TinyRow(turn.view, row["messages"], marks, nearest, turn.decision.situation, shut_ahead(turn))


def shut_ahead(turn: Turn) -> bool:
    """An exploring turn whose waypoint's farther axis (rows on a tie) is shut at the agent's side:
    the tour must go round. Rare in the tour's own episodes (7% of its exploring turns: it seldom
    walks up to water), frequent in a learner's play, and there the tour-taught model walked into
    the shut way on 35% of such teacher states against 1% elsewhere (docs/safari_learning.md, "The openings").
    The waypoint is the one the turn's decision heads for (its notepad update, else the notepad)."""
    from localqwen_safari.bearings import farther_way
    from localqwen_safari.policies import notepad_waypoint

    if not turn.ways_open or not turn.decision.situation.startswith("explore"):
        return False
    written = next((arguments.get("text", "") for name, arguments in turn.decision.calls if name == "update_notepad"), "")
    waypoint = notepad_waypoint(written) or notepad_waypoint(turn.compact_context)
    way = None if waypoint is None else farther_way(turn.position, waypoint)
    return way is not None and turn.ways_open[way] == 0


def decision_positions(ids: list[int], reply: int, pieces: list[str]) -> list[int]:
    """The positions in ``ids`` of the tokens that state the Thought's move (its direction and step
    count; ``pieces``: each token id's text), none where the reply states no move. The reply starts
    at ``reply``; the first stated move is the Thought's (the tool call comes after it)."""
    starts, text = [], ""
    for token in ids[reply:]:
        starts.append(len(text))
        text += pieces[token]
    from localqwen_safari.policies import STATED_MOVE

    match = STATED_MOVE.search(text)
    if match is None:
        return []
    spans = [match.span(1), match.span(2)]
    return [reply + k for k, start in enumerate(starts)
            if any(start < end and start + len(pieces[ids[reply + k]]) > begin for begin, end in spans)]


def tiny_rows(episodes: int, *, seed_start: int, teacher: str = "expert",
              views: list[tuple[bytes, list[int]]] | None = None, routes: list[TinyRow] | None = None,
              route_questions: int = 0, ask_route: bool = False, slips: float = 0.0,
              openings: bool = False) -> list[TinyRow]:
    """The teacher's episodes as compact rows with their labels (``slips``: that share of its
    exploring turns plays a learner's mistake instead of its move, slips.py; the rows keep its own
    decisions as labels). Given a ``views`` list, also
    appends every view with its cell classes, as vision_warmup.collect_views gathers them (the same
    list for the expert's episodes), so the warm-up need not play the episodes again. Given a
    ``routes`` list, appends ``route_questions`` route rows (route.py) on every view. ``ask_route``:
    each reply's context holds the route line a perfect route stage gives (route.true_route_line).
    ``openings``: each Thought says how far each way is open (openings.py)."""
    from localqwen_safari.episode import Episode
    from localqwen_safari.missions import missions_in_turn
    from localqwen_safari.policies import get_teacher
    from localqwen_safari.route import route_messages, true_route_line
    from localqwen_safari.route import route_questions as questions_on
    from localqwen_safari.slips import slipping
    from localqwen_safari.vision_warmup import turns_with_classes

    labels: list[Decision] = []
    draws: dict[str, random.Random] = {}
    teacher_policy = slipping(get_teacher(teacher), slips, labels,
                              lambda episode: draws.setdefault(episode.mission.id, random.Random(f"slip-{episode.mission.id}")))
    asked: list[list[tuple[str, str]]] = []
    lines: list[str] = []

    def policy(episode: Episode) -> Any:  # route questions and lines are put on the state the teacher sees
        if routes is not None and route_questions:
            asked.append(questions_on(episode, random.Random(f"route-{episode.mission.id}-{episode.turn}"),
                                      route_questions))
        if ask_route:
            lines.append(true_route_line(episode))
        return teacher_policy(episode)

    rows = []
    for mission in missions_in_turn(episodes, seed_start):
        for turn, classes in turns_with_classes(Episode.start(mission), policy):
            turn = replace(turn, decision=labels.pop())  # the teacher's decision, whatever was played
            rows.append(tiny_row(turn, lines.pop() if ask_route else "", openings))
            assert turn.view is not None
            if views is not None:
                views.append((turn.view, classes))
            if routes is not None and asked:
                routes += [TinyRow(turn.view, route_messages("view.png", question, answer), [], None, "route")
                           for question, answer in asked.pop()]
    return rows


def own_rows(model: Path, episodes: int, *, seed_start: int = DAGGER_SEED_START, teacher: str = "expert",
             batch_size: int = 100, max_new_tokens: int = 192, ask_route: bool = False,
             openings: bool = False) -> tuple[list[TinyRow], float]:
    """DAgger's rows for the tiny loop: ``model`` plays ``episodes`` missions (both kinds, seeds from
    ``seed_start``, away from the teacher's and the evaluation's) and every state it met becomes a
    row labelled by the teacher (dagger.expert_label). Returns the rows and the model's success rate
    on these missions. ``ask_route``: the model is asked the route first (route.py), and the rows'
    contexts hold the route line a perfect answer gives. ``openings``: the labels' Thoughts say how
    far each way is open (openings.py)."""
    import tempfile

    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen_safari.dagger import labelled_turns
    from localqwen_safari.missions import missions_in_turn
    from localqwen_safari.model_policy import ModelPolicy
    from localqwen_safari.policies import get_teacher

    labeller = get_teacher(teacher)
    missions = missions_in_turn(episodes, seed_start)
    rows, successes = [], 0
    with tempfile.TemporaryDirectory(prefix="safari-own-") as views, TransformersEngine(model) as engine:
        policy = ModelPolicy(engine, Path(views), settings=GenerationSettings(max_new_tokens=max_new_tokens),
                             prompt="compact", keep_replies=False, route=ask_route)
        for turns, group in labelled_turns(policy, missions, batch_size=batch_size, teacher=labeller,
                                           route=ask_route):
            rows += [tiny_row(turn, openings=openings) for _, turn in turns]
            successes += sum(episode.success for episode in group)
    return rows, successes / max(1, episodes)


def tower_fingerprint(visual: Any) -> str:
    """A digest of the vision tower's weights: features a row keeps are reused only with the same tower."""
    import hashlib

    digest = hashlib.sha256()
    for name, tensor in sorted(visual.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).numpy().tobytes())
    return digest.hexdigest()


def batch_indices(rng: random.Random, teacher_pool: list[int], teacher_count: int, total: int,
                  batch_size: int) -> list[int]:
    """A batch of row indices: rows ``teacher_count`` and on (the model's own states) fill half of it
    when there are any, and the teacher's rows the rest, drawn from ``teacher_pool`` (each of its
    rows once, or more often where oversampled: :func:`teacher_pool`)."""
    own = min(batch_size // 2, total - teacher_count) if teacher_count else batch_size
    return (rng.sample(teacher_pool, min(batch_size - own, len(teacher_pool)))
            + rng.sample(range(teacher_count, total), min(own, total - teacher_count)))


def teacher_pool(rows: list[TinyRow], oversample: int, shut_oversample: int = 1) -> list[int]:
    """The teacher's row indices to draw batches from: the rows whose turn has the target in sight or
    in reach (dataset.TARGET_SITUATIONS: about one in six) ``oversample`` times, the exploring rows
    whose waypoint's way is shut beside the agent (``TinyRow.shut``) ``shut_oversample`` times, the
    rest once."""
    from localqwen_safari.dataset import TARGET_SITUATIONS

    return [index for index, row in enumerate(rows)
            for _ in range(oversample if row.situation in TARGET_SITUATIONS else shut_oversample if row.shut else 1)]


def learning_rate_at(step: int, peak: float, progress: float, *, max_steps: int = -1,
                     final_fraction: float = 1.0) -> float:
    """The tiny loop's learning rate at ``step``: a linear warm-up over 100 steps (a tenth of a
    shorter ``max_steps``), then ``peak`` falling linearly with ``progress`` (the share of the
    budget spent, steps or minutes) to ``final_fraction`` of it."""
    warmup = min(100, max(1, max_steps // 10)) if max_steps > 0 else 100
    progress = min(1.0, max(0.0, progress))
    return peak * min(1.0, (step + 1) / warmup) * (1.0 - (1.0 - final_fraction) * progress)


def train_tiny(model_dir: Path, out: Path, *, episodes: int, seed_start: int | None = None,
               teacher: str = "expert", minutes: float | None = None, max_steps: int = -1,
               batch_size: int = 16, learning_rate: float = 2e-3, marking_weight: float = 1.0,
               readout_weight: float = 0.0, seed: int = 0, rows: list[TinyRow] | None = None,
               dagger_rows: list[TinyRow] | None = None, oversample: int = 1, final_lr_fraction: float = 1.0,
               pointer_weight: float = 0.0, pointer_place_weight: float = 0.0, route_rows: list[TinyRow] | None = None,
               route_share: float = 0.0, decision_weight: float = 1.0, shut_oversample: int = 1,
               average_decay: float = 0.0, on_step: Callable[[int, int, float], None] | None = None) -> TinyRun:
    """Train ``model_dir`` (a warmed tiny Qwen3-VL, vision_warmup.py) on ``episodes`` of the
    teacher's episodes (or ``rows`` made already, :func:`tiny_rows`) with the replies' loss plus ``marking_weight`` x marking and
    ``readout_weight`` x readout (0 turns a lesson off; readout is off by default: at weight 1 it
    swamped the replies and undid the marking, docs/safari_learning.md "Marking the target"); stop after
    ``max_steps`` steps or when ``minutes`` (counted from the call, so the rows and the features come out
    of it) run out. ``on_step(step, max_steps, loss)`` reports progress (max_steps -1: bounded by time only).
    ``dagger_rows`` (:func:`own_rows`, the model's own states) fill half of every batch: they are
    what it meets in play, and a few thousand beside the teacher's 35,000 would hardly be drawn.
    ``oversample``: the teacher's rows with the target in sight or reach are drawn this many times
    as often (:func:`teacher_pool`); ``shut_oversample``: so are the exploring rows whose waypoint's
    way is shut beside the agent (:func:`shut_ahead`).
    ``pointer_weight``: the pointer lesson (pointer.py): at the first sentence's positions, one
    attention head of the second layer is asked to look at the nearest target's image token;
    ``pointer_place_weight``: that head's output is asked for the row and col of the token it looks at.
    ``route_rows`` (route.py, :func:`tiny_rows` ``routes``): ``route_share`` of the steps are a
    batch of them alone (short rows: such a step costs about half a replies' step).
    ``decision_weight``: the tokens of the move a reply's Thought states ("I move *down* *4* steps")
    count this many times in the replies' loss (:func:`decision_positions`); the other fifty-odd
    tokens of a reply are copies of the context or of the Thought, and the mean over them leaves
    the decision a few percent of the gradient. The reported replies' loss stays the plain mean.
    The learning rate warms up over 100 steps (a tenth of a shorter ``max_steps``), then stays flat,
    or falls linearly to ``final_lr_fraction`` of ``learning_rate`` by the end of the budget
    (``max_steps`` or ``minutes``, whichever comes first). Flat by default: falling to a tenth gave
    a lower replies' loss and a model that noticed and declared the target less often, because the
    marking lesson stopped converging (docs/safari_learning.md, "A falling learning rate").
    ``average_decay`` (0: off): the model written is an exponential moving average of the weights
    (Polyak averaging; decay ``min(average_decay, (1 + step) / (10 + step))``, so the first steps
    are not frozen in), while training goes on from the live weights at the flat rate: the noise a
    flat rate leaves in the last weights is averaged out without slowing the lessons the way a
    falling rate did; the live weights are written to ``out/live`` beside it, for comparison.
    Writes the model to ``out/final``."""
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from transformers.models.qwen3_vl.modeling_qwen3_vl import BaseModelOutputWithDeepstackFeatures

    from localqwen_safari.dataset import TRAIN_SEED_START
    from localqwen_safari.pointer import HeadAttention, pointer_loss
    from localqwen_safari.vision_warmup import save_model_folder

    if not 0.0 <= average_decay < 1.0:  # before the rows and the features, the run's slow start
        raise ValueError(f"average_decay must be in [0, 1), got {average_decay}")
    started = time.monotonic()
    deadline = started + minutes * 60 if minutes is not None else None
    rng = random.Random(seed)
    torch.manual_seed(seed)
    if rows is None:
        rows = tiny_rows(episodes, seed_start=TRAIN_SEED_START if seed_start is None else seed_start, teacher=teacher)
    teacher_count, pool = len(rows), teacher_pool(rows, oversample, shut_oversample)
    rows = rows + (dagger_rows or [])
    replies_count = len(rows)
    rows = rows + (route_rows or [])
    if route_share and replies_count == len(rows):
        raise ValueError("route_share needs route rows (tiny_rows(routes=..., route_questions=...))")
    if not rows:
        raise ValueError("no rows to train on: give at least one episode")
    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32)
    config = model.config
    merge = config.vision_config.spatial_merge_size
    if merge != 1:
        raise ValueError(f"marking needs one image token per cell (spatial_merge_size 1), this model merges {merge}x{merge}: "
                         "build it with build_tiny_model(merge=1)")
    if config.text_config.num_hidden_layers < 3:
        raise ValueError("the marking (layer 1) and readout (layer 2) lessons need at least 3 decoder layers")
    tokenizer = processor.tokenizer
    image_id, im_start = config.image_token_id, tokenizer.convert_tokens_to_ids("<|im_start|>")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    cells = VIEW * VIEW

    # The frozen tower's features of every view, once (fp16 keeps 35,000 views at ~1.3 GB); kept on
    # the rows, so a DAgger round that passes the same rows again does not encode them again. Rows
    # on the same view (a turn's route rows share its view's bytes) share its features.
    visual = model.model.visual
    visual.requires_grad_(False)
    tower = tower_fingerprint(visual)
    todo: dict[int, list[TinyRow]] = {}
    for row in rows:
        if row.tower != tower:
            todo.setdefault(id(row.view), []).append(row)
    groups = list(todo.values())
    with torch.no_grad():
        for first in range(0, len(groups), 256):
            chunk = groups[first:first + 256]
            images = [Image.open(io.BytesIO(group[0].view)).convert("RGB") for group in chunk]
            encoded = processor.image_processor(images=images, return_tensors="pt")
            output = visual(encoded["pixel_values"], grid_thw=encoded["image_grid_thw"], return_dict=True)
            pooled = output.pooler_output.reshape(len(images), cells, -1).half()
            stacked = torch.stack([layer.reshape(len(images), cells, -1) for layer in output.deepstack_features], 1).half()
            for n, group in enumerate(chunk):
                view_features, view_deepstack = pooled[n].clone(), stacked[n].clone()
                for row in group:
                    row.features, row.deepstack, row.tower = view_features, view_deepstack, tower

    # Token ids, where the reply starts, and the span of the Thought's first sentence.
    dots = {token for token in range(len(tokenizer)) if "." in tokenizer.decode([token])}
    encoded_rows = []
    for row in rows:
        text = processor.apply_chat_template(row.messages, tokenize=False)
        ids = tokenizer(text.replace("<|image_pad|>", "<|image_pad|>" * cells))["input_ids"]
        reply = max(i for i, token in enumerate(ids) if token == im_start) + 3  # after "<|im_start|>assistant\n"
        first_end = next((i for i in range(reply, len(ids)) if ids[i] in dots), reply)
        encoded_rows.append((ids, reply, first_end))
    decisions: list[list[int]] = [[] for _ in encoded_rows]
    if decision_weight != 1.0:
        pieces = [tokenizer.decode([token]) for token in range(len(tokenizer))]
        decisions = [decision_positions(ids, reply, pieces) for ids, reply, _ in encoded_rows]

    # The pointer head: the second layer's first head, whose keys already carry the marking.
    pointer = HeadAttention(model.model.language_model.layers[POINTER_LAYER], POINTER_HEAD) \
        if pointer_weight or pointer_place_weight else None

    hidden = config.text_config.hidden_size
    mark_head, readout_head = torch.nn.Linear(hidden, 1), torch.nn.Linear(hidden, 2 * VIEW)
    place_head = torch.nn.Linear(config.text_config.head_dim, 2 * VIEW)  # reads the pointer head's output
    trained = [p for p in model.parameters() if p.requires_grad] + [*mark_head.parameters(), *readout_head.parameters(),
                                                                    *place_head.parameters()]
    optimiser = torch.optim.AdamW(trained, lr=learning_rate, weight_decay=0.0)
    averaged = [(p, p.detach().clone()) for p in model.parameters() if p.requires_grad] if average_decay else []
    cross_entropy = torch.nn.functional.cross_entropy

    def step_loss(batch: list[int]) -> tuple[torch.Tensor, list[float | None]]:
        length = max(len(encoded_rows[i][0]) for i in batch)
        ids = torch.full((len(batch), length), pad_id)
        mask = torch.zeros((len(batch), length), dtype=torch.long)
        labels = torch.full((len(batch), length), -100)
        for n, i in enumerate(batch):
            row_ids, reply, _ = encoded_rows[i]
            ids[n, :len(row_ids)] = torch.tensor(row_ids)
            mask[n, :len(row_ids)] = 1
            labels[n, reply:len(row_ids)] = ids[n, reply:len(row_ids)]
        # per-image tuples, as Qwen3VLModel.get_image_features hands them on (its annotation says Tensor)
        deepstack = torch.stack([rows[i].deepstack for i in batch]).float()
        vision = BaseModelOutputWithDeepstackFeatures(
            pooler_output=tuple(rows[i].features.float() for i in batch),  # type: ignore[arg-type]
            deepstack_features=[tuple(deepstack[:, k]) for k in range(deepstack.shape[1])])  # type: ignore[misc]
        output = model.model(input_ids=ids, attention_mask=mask, mm_token_type_ids=(ids == image_id).long(),
                             image_grid_thw=torch.tensor([[1, VIEW, VIEW]] * len(batch)),
                             mm_encoder_outputs={"image": vision}, output_hidden_states=True)
        # The vocabulary's logits only where a reply token is predicted (a quarter of the positions):
        # the model's own mean loss, at a fraction of its head's cost.
        predicted = labels[:, 1:] != -100
        per_token = cross_entropy(model.lm_head(output.last_hidden_state[:, :-1][predicted]), labels[:, 1:][predicted],
                                  reduction="none")
        replies = per_token.mean()
        weighted = replies
        if decision_weight != 1.0:
            weights = torch.ones((len(batch), length))
            for n, i in enumerate(batch):
                weights[n, decisions[i]] = decision_weight
            chosen = weights[:, 1:][predicted]  # position p's token is predicted at p - 1
            weighted = (per_token * chosen).sum() / chosen.sum()
        marked = torch.tensor([bool(rows[i].marks) for i in batch])  # route rows have no marking lesson
        marking = torch.zeros(())
        if marked.any():
            marks = torch.tensor([mark for i in batch for mark in rows[i].marks])
            marking = torch.nn.functional.binary_cross_entropy_with_logits(
                mark_head(output.hidden_states[1][(ids == image_id) & marked[:, None]]).squeeze(-1), marks,
                pos_weight=torch.tensor(MARK_POSITIVE_WEIGHT))
        states, places, queries, keys = [], [], [], []
        for n, i in enumerate(batch):
            nearest, (row_ids, reply, first_end) = rows[i].nearest, encoded_rows[i]
            if nearest is not None:  # the positions whose next token is in the first sentence
                states.append(output.hidden_states[2][n, reply - 1:first_end])
                places += [nearest] * (first_end - reply + 1)
                queries.append((n, reply - 1, first_end - 1))
                keys.append([row_ids.index(image_id) + nearest[0] * VIEW + nearest[1]])
        pointing, pointer_place = torch.zeros(()), torch.zeros(())
        if pointer is not None and queries:
            probabilities = pointer.probabilities([len(encoded_rows[i][0]) for i in batch])
            pointing = pointer_loss(probabilities, queries, keys)
            if pointer_place_weight:  # the head's output says the row and col of what it looks at
                handed_on = pointer.output(probabilities)
                logits = place_head(torch.cat([handed_on[n, first:last + 1] for n, first, last in queries]))
                where = torch.tensor(places)
                pointer_place = cross_entropy(logits[:, :VIEW], where[:, 0]) + cross_entropy(logits[:, VIEW:], where[:, 1])
        readout = torch.zeros(())
        if states:
            logits, where = readout_head(torch.cat(states)), torch.tensor(places)
            readout = cross_entropy(logits[:, :VIEW], where[:, 0]) + cross_entropy(logits[:, VIEW:], where[:, 1])
        loss = (weighted + marking_weight * marking + readout_weight * readout + pointer_weight * pointing
                + pointer_place_weight * pointer_place)
        # readout and pointer apply to rows with the target in view: None where the batch had none;
        # a batch of route rows reports its loss as the route's, not the replies'
        route = batch[0] >= replies_count
        return loss, [None if route else replies.item(), marking.item() if marked.any() else None,
                      readout.item() if states else None,
                      pointing.item() if pointer is not None and queries else None,
                      pointer_place.item() if pointer_place_weight and queries else None,
                      replies.item() if route else None]

    def learning_rate_now(step: int, loop_started: float) -> float:
        done = [step / max_steps] if max_steps > 0 else []
        if deadline is not None:
            done.append((time.monotonic() - loop_started) / max(1e-9, deadline - loop_started))
        return learning_rate_at(step, learning_rate, max(done, default=0.0), max_steps=max_steps,
                                final_fraction=final_lr_fraction)

    model.train()
    step, recent, replies_loss = 0, list[list[float | None]](), 0.0
    stopped_by_budget = False
    loop_started = time.monotonic()
    while max_steps < 0 or step < max_steps:
        if deadline is not None and time.monotonic() > deadline:
            stopped_by_budget = True
            break
        for group in optimiser.param_groups:
            group["lr"] = learning_rate_now(step, loop_started)
        if route_share and rng.random() < route_share:
            batch = rng.sample(range(replies_count, len(rows)), min(batch_size, len(rows) - replies_count))
        else:
            batch = batch_indices(rng, pool, teacher_count, replies_count, batch_size)
        loss, parts = step_loss(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimiser.step()
        optimiser.zero_grad()
        if averaged:
            with torch.no_grad():
                decay = min(average_decay, (1 + step) / (10 + step))
                for live, shadow in averaged:
                    shadow.lerp_(live, 1.0 - decay)
        step += 1
        recent = (recent + [parts])[-100:]
        replies_loss = parts[0] if parts[0] is not None else replies_loss
        if on_step is not None:
            on_step(step, max_steps, replies_loss)  # the replies' loss (the last one, on a route step)
    loop_seconds = time.monotonic() - loop_started  # before the writing below: the steps' own time
    model.eval()
    if pointer is not None:
        pointer.remove()
    if averaged:
        save_model_folder(model, processor, model_dir, Path(out) / "live")
        with torch.no_grad():
            for live, shadow in averaged:
                live.copy_(shadow)
    final = save_model_folder(model, processor, model_dir, Path(out) / "final")
    # the last 100 steps' means, each over the steps its lesson applied to (0.0 where it never did)
    names = ("replies", "marking", "readout", "pointer", "pointer_place", "route")
    applied = [[value for parts in recent if (value := parts[k]) is not None] for k in range(len(names))]
    return TinyRun(final, step, round(time.monotonic() - started, 1), stopped_by_budget, len(rows),
                   {name: round(sum(values) / max(1, len(values)), 4) for name, values in zip(names, applied, strict=True)},
                   round(loop_seconds / max(1, step), 4))
