"""The look stage (look.py): what a perfect look answers, the map cell the policy adds, the rows
``generate(look=True)`` writes, and a vision model asked the look's questions before its reply."""

from __future__ import annotations

import json

import pytest
from event_streams import drain
from localqwen_safari.dataset import CONVERSATIONS_FILE, DATASET_FILE, generate
from localqwen_safari.episode import Episode
from localqwen_safari.look import LOOK_PREFIX, look_line, look_targets, pinned, sighting, true_look, with_look
from localqwen_safari.missions import Mission, mission_for_seed
from localqwen_safari.model_policy import ModelPolicy, model_messages
from localqwen_safari.policies import visible_animals

from localqwen.training.data import read_rows, validate_rows

# A lion two rows down and three cols right of the agent, another further off, a zebra up-left.
MISSION = Mission("look", "find-two", ("lion", "zebra"),
                  map=("Z.......", "........", "........", "........", "......L.", "........", ".......L"),
                  start=(2, 3), max_turns=5)


def test_a_perfect_look_names_the_nearest_animal_of_the_species_or_none():
    here = (2, 3)
    in_view = [("lion", (6, 7)), ("lion", (4, 6)), ("zebra", (0, 0))]
    assert sighting("lion", here, in_view) == "The lion is 2 rows down and 3 cols right."
    assert sighting("zebra", here, in_view) == "The zebra is 2 rows up and 3 cols left."
    assert sighting("giraffe", here, in_view) == "No giraffe in view."
    assert look_line(["lion", "giraffe"], here, in_view) == \
        "The lion is 2 rows down and 3 cols right, at (4, 6). No giraffe in view."


def test_an_answer_gets_the_map_cell_it_names_and_nothing_else_is_trusted():
    assert pinned("The lion is 1 row up.", (5, 5)) == "The lion is 1 row up, at (4, 5)."
    assert pinned("The lion is 4 cols left.", (5, 5)) == "The lion is 4 cols left, at (5, 1)."
    assert pinned("No lion in view.", (5, 5)) == "No lion in view."
    assert pinned("The lion is right here.", (5, 5)) == "The lion is right here."  # no place named
    assert pinned("The lion is 2 rows down and", (5, 5)) == "The lion is 2 rows down and"  # cut off: kept as said
    assert pinned("  lion lion\nlion " * 40, (5, 5)) == ("lion lion lion " * 40)[:80]
    assert with_look("At (2, 3).", "No lion in view.") == f"At (2, 3).\n{LOOK_PREFIX}No lion in view."
    assert with_look("At (2, 3).", "") == "At (2, 3)."


def test_the_look_asks_about_the_targets_not_yet_found():
    episode = Episode.start(MISSION)
    assert look_targets(episode) == ["lion", "zebra"]
    assert true_look(episode) == ("The lion is 2 rows down and 3 cols right, at (4, 6). "
                                  "The zebra is 2 rows up and 3 cols left, at (0, 0).")
    episode.found.append("lion")
    assert look_targets(episode) == ["zebra"]


def test_generate_with_look_writes_the_reply_with_its_look_line_and_the_look_rows(tmp_path):
    _, summary = drain(generate(tmp_path, 4, seed_start=500, prompt="compact", teacher="sweeper", look=True))
    seed_rows = [json.loads(line) for line in (tmp_path / DATASET_FILE).read_text().splitlines()]
    raw = [json.loads(line) for line in (tmp_path / CONVERSATIONS_FILE).read_text().splitlines()]
    assert len(raw) == summary["training_rows"] > summary["rows"] == len(seed_rows)
    assert validate_rows(read_rows(tmp_path / CONVERSATIONS_FILE)).ok
    replies = [row for row in raw if "tool_calls" in row["messages"][-1]]
    looks = [row for row in raw if "tool_calls" not in row["messages"][-1]]
    assert len(replies) == len(seed_rows) and len(looks) == summary["training_rows"] - summary["rows"]

    # The first turn: its reply's context ends with what a perfect look says of that view, and
    # the look rows after it ask about the target (question first, then the view) and maybe about
    # one other species in view.
    episode = Episode.start(mission_for_seed("find-one", 500))
    first_reply_text = replies[0]["messages"][1]["content"][0]["text"]  # compact: the context, then the view
    assert first_reply_text == with_look(episode.compact_context(), true_look(episode))
    assert seed_rows[0]["context_text"] == with_look(episode.context_text(), true_look(episode))
    in_view = visible_animals(episode)
    first_looks = [row for row in raw[1:3] if "tool_calls" not in row["messages"][-1]]
    assert len(first_looks) in (1, 2)
    if len(first_looks) == 2:
        asked = first_looks[1]["messages"][1]["content"][0]["text"]
        assert any(asked == f"Where is the {species}?" for species, _ in in_view)
    question, view = first_looks[0]["messages"][1]["content"]
    assert question == {"type": "text", "text": f"Where is the {episode.mission.targets[0]}?"}
    assert view == {"type": "image", "image": seed_rows[0]["image_file"]}
    assert first_looks[0]["messages"][-1]["content"] == sighting(episode.mission.targets[0], episode.position, in_view)
    answers = [row["messages"][-1]["content"] for row in looks]
    assert any(a.startswith("No ") for a in answers) and any(" is " in a for a in answers)
    assert summary["rows"] < len(looks) < 2 * summary["rows"]  # a row per turn with a target, some with two


def test_a_text_engine_cannot_look(tiny_qwen3_path, tmp_path):
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    with TransformersEngine(tiny_qwen3_path) as engine, pytest.raises(ValueError, match="play it without --look"):
        ModelPolicy(engine, tmp_path, look=True)


def test_a_looking_policy_asks_where_each_target_is_before_its_reply(tiny_qwen3_vl_path, tmp_path, recording):
    """Random weights: what it answers is noise, but the order of questions and where the answers go
    is what is tested (a trained look is measured by bench_safari_learning.py --look)."""
    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    with TransformersEngine(tiny_qwen3_vl_path) as real:
        engine = recording(real)
        policy = ModelPolicy(engine, tmp_path, settings=GenerationSettings(max_new_tokens=8), prompt="compact",
                             look=True)
        episodes = [Episode.start(MISSION), Episode.start(mission_for_seed("find-one", 3))]
        decisions = policy.decide(episodes)
    assert len(decisions) == 2
    looked, replied = engine.asked
    assert [conversation[1]["content"][0]["text"] for conversation in looked] == \
        ["Where is the lion?", "Where is the zebra?", f"Where is the {episodes[1].mission.targets[0]}?"]
    assert all(conversation[1]["content"][1]["type"] == "image" for conversation in looked)
    assert len(policy.looks) == 2
    for episode, look, conversation in zip(episodes, policy.looks, replied, strict=True):
        assert conversation == model_messages(episode, image=conversation[1]["content"][1]["image"],
                                              prompt="compact", look=look)
        assert look == look.strip() and "  " not in look  # what the look said, no blank answers


def test_the_watch_views_offer_a_looking_profile():
    from localqwen_safari.watching import PROFILES, profile_fields

    assert [tuple(profile_fields(value).values()) for _, value in PROFILES] == \
        [("full", False, False), ("compact", False, False), ("compact", True, False), ("compact", False, True)]
    assert profile_fields("") == {"prompt": "full", "look": False, "route": False}


def test_look_accuracy_scores_the_look_rows_of_a_folder(tmp_path):
    """Random weights answer nothing right; what is tested is which rows are scored and how they split."""
    from localqwen_safari.learning import build_tiny_model, look_accuracy

    drain(generate(tmp_path / "held", 2, seed_start=900, prompt="compact", teacher="sweeper", look=True))
    looks = [row for row in read_rows(tmp_path / "held" / CONVERSATIONS_FILE) if "tool_calls" not in row["messages"][-1]]
    model = build_tiny_model(tmp_path / "model", teacher="sweeper", merge=1, corpus_episodes=2)
    scores = look_accuracy(model, tmp_path / "held", limit=12, batch=6)
    wanted = looks[:12]
    assert scores["rows"] == len(wanted)
    assert scores["in_view_rows"] == sum(not row["messages"][-1]["content"].startswith("No ") for row in wanted)
    assert 0 <= scores["in_view"] <= 1 and 0 <= scores["not_in_view"] <= 1
    with pytest.raises(ValueError, match="no look rows"):
        drain(generate(tmp_path / "plain", 1, seed_start=900, prompt="compact"))
        look_accuracy(model, tmp_path / "plain")
