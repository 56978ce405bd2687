"""The tiny model's own training loop (tiny_training.py): its labels are what the view shows, its
rows are the data source's compact rows, and a real tiny Qwen3-VL trains on them, the marking
lesson learning, into a folder the model policy plays."""

from __future__ import annotations

import io

import pytest
from localqwen_safari.episode import VIEW, Episode
from localqwen_safari.look import sighting, target_sentence
from localqwen_safari.missions import Mission, mission_for_seed
from localqwen_safari.policies import visible_animals
from localqwen_safari.render import CELL_PX, COLOURS, render_view
from localqwen_safari.tiny_training import own_rows, target_marks, tiny_rows


def test_marks_are_the_cells_the_view_draws_the_target_in():
    # two zebras and a lion in view; the agent at (3, 3)
    mission = Mission("m", "find-one", ("zebra",), map=("Z.....", "......", "....L.", "......", ".....Z"), start=(3, 3))
    episode = Episode.start(mission)
    marks, nearest = target_marks("zebra", episode.position, visible_animals(episode))
    from PIL import Image

    image = Image.open(io.BytesIO(render_view(episode))).convert("RGB")
    drawn = [image.getpixel((c * CELL_PX + CELL_PX // 2, r * CELL_PX + CELL_PX // 2)) == COLOURS["zebra"]
             for r in range(VIEW) for c in range(VIEW)]
    assert [bool(mark) for mark in marks] == drawn and sum(drawn) == 2
    # the nearest zebra, in view cells, is the one the Thought's first sentence names
    top, left = episode.view_origin()
    assert (top, left) == (-1, -1) and nearest == (4 - top, 5 - left)  # the zebra at (4, 5), not (0, 0)
    assert sighting("zebra", episode.position, visible_animals(episode)) == "The zebra is 1 row down and 2 cols right."
    assert target_marks("giraffe", episode.position, visible_animals(episode)) == ([0.0] * VIEW * VIEW, None)


def test_rows_are_the_data_sources_compact_rows(tmp_path):
    from localqwen_safari.dataset import CONVERSATIONS_FILE, generate

    from localqwen.training.data import read_rows

    for _ in generate(tmp_path, 2, seed_start=700, prompt="compact"):
        pass
    written = read_rows(tmp_path / CONVERSATIONS_FILE)
    rows = tiny_rows(2, seed_start=700)
    assert len(rows) == len(written)
    for row, chat in zip(rows, written, strict=True):
        assert row.messages[0] == chat["messages"][0] and row.messages[2] == chat["messages"][2]
        assert row.messages[1]["content"][0] == chat["messages"][1]["content"][0]  # the context, then the view
        assert [part["type"] for part in row.messages[1]["content"]] == ["text", "image"]
        lead = row.messages[2]["content"].removeprefix("Thought: ")
        assert (row.nearest is not None) == lead.startswith("The ") and sum(row.marks) >= (row.nearest is not None)
    first = Episode.start(mission_for_seed("find-one", 700))
    assert rows[0].view == render_view(first)
    assert rows[0].messages[2]["content"].startswith(
        "Thought: " + target_sentence([first.mission.targets[0]], first.position, visible_animals(first)))


@pytest.mark.slow  # builds, warms up and trains a tiny Qwen3-VL (~50 s on one core)
def test_a_tiny_model_learns_to_mark_the_target_and_plays(tmp_path):
    from localqwen_safari.evaluation import Tally, evaluate_lockstep
    from localqwen_safari.learning import build_tiny_model
    from localqwen_safari.model_policy import ModelPolicy
    from localqwen_safari.tiny_training import train_tiny
    from localqwen_safari.vision_warmup import warm_up_vision
    from safetensors.torch import load_file

    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    base = build_tiny_model(tmp_path / "base", hidden=64, layers=3, vision_depth=1, corpus_episodes=10, merge=1)
    warm = warm_up_vision(base, tmp_path / "warm", episodes=10, steps=60)
    first = train_tiny(warm.model, tmp_path / "short", episodes=10, max_steps=5, batch_size=8, readout_weight=0.1,
                       pointer_weight=0.5, pointer_place_weight=0.5)
    from localqwen_safari.dataset import TRAIN_SEED_START

    rows = tiny_rows(10, seed_start=TRAIN_SEED_START)
    run = train_tiny(warm.model, tmp_path / "run", episodes=10, max_steps=120, batch_size=8, readout_weight=0.1,
                     pointer_weight=0.5, pointer_place_weight=0.5, rows=rows)
    encoded = [row.features for row in rows]
    assert all(features is not None and tuple(features.shape) == (VIEW * VIEW, 64) for features in encoded)
    assert run.steps == 120 and not run.stopped_by_budget and run.rows > 100
    # a step's time is the loop's alone: the rows, the features and the writing are left out of it
    assert run.step_seconds > 0 and run.step_seconds * run.steps < run.seconds
    # the lessons learn: the last 100 steps' losses are below the first 5 steps'
    assert run.losses["replies"] < first.losses["replies"] and run.losses["marking"] < first.losses["marking"]
    assert run.losses["readout"] < first.losses["readout"]
    # the pointer head learns to look at the target: at first its attention is spread over ~300 tokens
    assert first.losses["pointer"] > 3.0 and run.losses["pointer"] < 0.5 * first.losses["pointer"]
    assert run.losses["pointer_place"] < first.losses["pointer_place"]  # and its output says where that is
    # an ordinary Qwen3-VL folder: the model policy plays it with the compact profile
    with TransformersEngine(run.model) as engine:
        policy = ModelPolicy(engine, tmp_path / "views", settings=GenerationSettings(max_new_tokens=48),
                             prompt="compact")
        tally = Tally()
        for _ in evaluate_lockstep(policy, [mission_for_seed("find-one", 1000)], tally):
            pass
    assert tally.episodes == 1 and policy.replies and policy.replies[0].startswith("Thought:")
    # DAgger: it plays, the expert labels the states it met, and training goes on with them
    own, success = own_rows(run.model, 2, batch_size=2, max_new_tokens=48)
    assert len(own) >= 2 and 0.0 <= success <= 1.0 and all(len(row.marks) == VIEW * VIEW for row in own)
    more = train_tiny(run.model, tmp_path / "dagger", episodes=10, max_steps=3, batch_size=8, rows=rows, dagger_rows=own)
    # the same frozen tower: the teacher's rows keep the features they had, the new rows get theirs
    assert all(row.features is features for row, features in zip(rows, encoded, strict=True))
    assert all(row.features is not None for row in own)
    assert more.steps == 3 and more.rows == run.rows + len(own) and (more.model / "config.json").is_file()
    # the route lesson (route.py): its rows take their turn's view features, and its loss falls
    from localqwen_safari.route import route_accuracy

    routes: list = []
    rows = tiny_rows(10, seed_start=TRAIN_SEED_START, routes=routes, route_questions=2)
    routed = [train_tiny(run.model, tmp_path / f"route-{steps}", episodes=10, max_steps=steps, batch_size=8, rows=rows,
                         route_rows=routes, route_share=0.5, seed=1) for steps in (6, 60)]
    assert all(route.features is not None for route in routes)
    assert {id(route.features) for route in routes} <= {id(row.features) for row in rows}
    assert 0 < routed[1].losses["route"] < routed[0].losses["route"] and routed[1].losses["replies"] > 0
    assert routed[1].rows == len(rows) + len(routes)
    scores = route_accuracy(routed[1].model, routes, limit=16, batch=8)
    assert scores["rows"] == 16 and all(0.0 <= scores[key] <= 1.0 for key in ("exact", "direction", "majority"))
    with pytest.raises(ValueError, match="needs route rows"):
        train_tiny(run.model, tmp_path / "no-routes", episodes=10, max_steps=1, rows=rows, route_share=0.5)
    merged = build_tiny_model(tmp_path / "merged", hidden=64, layers=3, vision_depth=1, corpus_episodes=5)
    with pytest.raises(ValueError, match="one image token per cell"):
        train_tiny(merged, tmp_path / "refused", episodes=1, max_steps=1)
    with pytest.raises(ValueError, match="at least one episode"):
        train_tiny(warm.model, tmp_path / "none", episodes=0, max_steps=1)
    # the weights averaged: the folder written is the average of the steps' weights, which lies nearer
    # the start than the live weights written beside it
    averaged = train_tiny(run.model, tmp_path / "averaged", episodes=10, max_steps=6, batch_size=8, rows=rows,
                          average_decay=0.99)
    start, live, final = (load_file(folder / "model.safetensors") for folder in
                          (run.model, averaged.model.parent / "live", averaged.model))
    moved = [name for name in start if not start[name].equal(live[name])]
    assert moved and all(name.startswith("model.language_model") or name == "lm_head.weight" for name in moved)
    assert all(start[name].equal(final[name]) for name in start if name not in moved)  # the frozen tower too
    assert all((final[name] - start[name]).norm() < (live[name] - start[name]).norm() for name in moved)
    with pytest.raises(ValueError, match="average_decay"):
        train_tiny(run.model, tmp_path / "no-average", episodes=10, max_steps=1, rows=rows, average_decay=1.0)


def test_the_learning_bench_takes_marking_only_where_it_applies():
    from bench_scripts import bench_script

    bench = bench_script("bench_safari_learning")
    args = bench.parse_args(["--marking", "--merge", "1"])
    # as measured in docs/safari_learning.md
    assert args.marking and args.marking_weight == 1.0 and args.readout_weight == 0.0
    assert args.pointer_weight == 0.0 and args.seed == 0  # the seed every measured run so far had
    assert args.oversample == 12  # the target's turns drawn 12 times as often: what taught the reply to place it
    assert bench.parse_args(["--marking", "--merge", "1", "--oversample", "3"]).oversample == 3
    assert bench.parse_args([]).oversample == 1  # the trainer's path: each turn once unless asked
    assert args.route_questions == 0  # no route rows unless asked (route.py)
    assert args.pointer_place_weight == 0.0
    assert bench.parse_args(["--marking", "--merge", "1", "--pointer-place-weight", "0.5"]).pointer_place_weight == 0.5
    routed = bench.parse_args(["--marking", "--merge", "1", "--route-questions", "2", "--route-share", "0.3"])
    assert (routed.route_questions, routed.route_share) == (2, 0.3)
    for refused in (["--marking"], ["--marking", "--merge", "1", "--look"],
                    ["--marking", "--merge", "1", "--dagger-rounds", "1", "--dagger-share", "1"],
                    ["--marking", "--merge", "1", "--final-lr-fraction", "1.5"],
                    ["--pointer-weight", "1"], ["--marking", "--merge", "1", "--pointer-weight", "-1"],
                    ["--marking", "--merge", "1", "--model", "Qwen/Qwen3-VL-2B-Instruct", "--lora"],
                    ["--marking", "--merge", "1", "--oversample", "0"], ["--route-questions", "2"],
                    ["--pointer-place-weight", "1"], ["--marking", "--merge", "1", "--pointer-place-weight", "-1"],
                    ["--marking", "--merge", "1", "--route-questions", "-1"],
                    ["--marking", "--merge", "1", "--route-questions", "2", "--route-share", "1"]):
        with pytest.raises(SystemExit):
            bench.parse_args(refused)


def test_the_learning_rate_warms_up_then_falls_to_its_final_share():
    from localqwen_safari.tiny_training import learning_rate_at

    assert learning_rate_at(0, 2e-3, 0.0) == pytest.approx(2e-5)  # 100 warm-up steps on a time budget
    assert learning_rate_at(99, 2e-3, 0.0) == pytest.approx(2e-3)
    assert learning_rate_at(900, 2e-3, 1.0) == pytest.approx(2e-3)  # flat by default
    assert learning_rate_at(500, 2e-3, 0.5, final_fraction=0.1) == pytest.approx(1.1e-3)
    assert learning_rate_at(900, 2e-3, 1.0, final_fraction=0.1) == pytest.approx(2e-4)
    assert learning_rate_at(900, 2e-3, 1.7, final_fraction=0.1) == pytest.approx(2e-4)  # past the deadline: no lower
    assert learning_rate_at(0, 2e-3, 0.0, max_steps=50) == pytest.approx(2e-3 / 5)  # warm-up: a tenth of 50


def test_the_models_own_states_fill_half_of_every_batch():
    import random

    from localqwen_safari.tiny_training import batch_indices

    rng = random.Random(0)
    pool = list(range(1000))
    for _ in range(50):
        batch = batch_indices(rng, pool, 1000, 1040, 16)
        assert len(batch) == len(set(batch)) == 16
        assert sum(index >= 1000 for index in batch) == 8
    assert sorted(batch_indices(rng, pool, 1000, 1003, 16)[-3:]) == [1000, 1001, 1002]  # few own rows: all of them
    assert all(index < 1000 for index in batch_indices(rng, pool, 1000, 1000, 16))  # none: the teacher's alone
    assert sorted(batch_indices(rng, [], 0, 5, 16)) == [0, 1, 2, 3, 4]  # own rows alone


def test_oversampled_rows_are_the_target_turns():
    from localqwen_safari.dataset import TARGET_SITUATIONS
    from localqwen_safari.tiny_training import teacher_pool

    rows = tiny_rows(4, seed_start=700)
    targets = [index for index, row in enumerate(rows) if row.situation in TARGET_SITUATIONS]
    assert 0 < len(targets) < len(rows) / 2 and all(row.situation for row in rows)
    assert teacher_pool(rows, 1) == list(range(len(rows)))
    pool = teacher_pool(rows, 3)
    assert len(pool) == len(rows) + 2 * len(targets)
    assert all(pool.count(index) == (3 if index in targets else 1) for index in range(len(rows)))


def test_the_models_own_states_as_rows_are_the_teachers_rows_when_the_teacher_plays():
    from localqwen_safari.dagger import labelled_turns
    from localqwen_safari.missions import KINDS
    from localqwen_safari.policies import expert
    from localqwen_safari.tiny_training import tiny_row

    class ExpertBatch:
        def decide(self, episodes):
            return [expert(episode) for episode in episodes]

    missions = [mission_for_seed(list(KINDS)[index % 2], 800 + index) for index in range(3)]
    played = [(index, turn) for turns, _ in labelled_turns(ExpertBatch(), missions, batch_size=2) for index, turn in turns]
    own = [tiny_row(turn) for _, turn in sorted(played, key=lambda item: item[0])]  # a stable sort: turns in order
    taught = tiny_rows(3, seed_start=800)
    assert len(own) == len(taught) > 10
    assert all(a.view == b.view and a.messages == b.messages and a.marks == b.marks and a.nearest == b.nearest
               for a, b in zip(own, taught, strict=True))


def test_the_decision_positions_are_the_tokens_of_the_thoughts_stated_move(tmp_path):
    from localqwen_safari.tiny_training import decision_positions

    from localqwen.testing.tiny_models import build_tokenizer

    tokenizer = build_tokenizer(tmp_path, corpus=["No lion in view. I move down 4 steps to explore. I move left 1 step."] * 20)
    pieces = [tokenizer.decode([token]) for token in range(len(tokenizer))]
    prompt = tokenizer("Find: lion.")["input_ids"]
    reply = tokenizer('Thought: No lion in view. I move down 4 steps to explore.<tool_call>{"direction": "left"}')["input_ids"]
    ids = prompt + reply
    chosen = decision_positions(ids, len(prompt), pieces)
    said = [pieces[ids[position]].strip() for position in chosen]
    assert said == ["down", "4"]  # the Thought's move, not the tool call's (nor anything before the reply)
    assert all(position >= len(prompt) for position in chosen)
    one = tokenizer("Thought: I move left 1 step.")["input_ids"]
    assert [pieces[one[position]].strip() for position in decision_positions(one, 0, pieces)] == ["left", "1"]
    assert decision_positions(tokenizer("Thought: Every target is found, so I finish.")["input_ids"], 0, pieces) == []


def test_the_learning_bench_prices_the_hidden_notepad_on_the_ablations_own_missions():
    """The model on 300 missions against the notepad hidden on the first 100: the cost is taken
    against the model's own first 100 where the bench kept them (2026-12-05: 22.0% on 300, 16.0% on
    the first 100, hidden 9.0%: 7 points, not 13)."""
    from bench_scripts import bench_script

    bench = bench_script("bench_safari_learning")

    def run(policy, kind, success, episodes):
        return {"policy": policy, "kind": kind, "success_rate": success, "episodes": episodes,
                "valid_tool_calls": 1.0, "action_agreement": 1.0, "thought_consistency": 1.0}

    runs = [run("model", "find-one", 0.487, 300), run("model", "find-two", 0.22, 300),
            run("model (notepad hidden)", "find-two", 0.09, 100)]
    assert bench.goal_check(runs)["hidden notepad cost (find-two)"]["value"] == 0.13  # no same-seed record
    cost = bench.goal_check(runs + [run(bench.SAME_SEEDS, "find-two", 0.16, 100)])["hidden notepad cost (find-two)"]
    assert cost["value"] == 0.07 and not cost["met"] and cost["missions"] == 100
