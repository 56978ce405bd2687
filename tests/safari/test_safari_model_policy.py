"""The ``model`` policy on a real engine: a tiny Qwen3 taught one reply (a valid move plus a call
with a bad argument) plays a mission. Its calls are parsed and checked like any policy's; what it
gets wrong becomes error results and wasted turns, never an exception."""

from __future__ import annotations

import pytest
from localqwen_safari.episode import Episode, tool_schemas
from localqwen_safari.missions import Mission
from localqwen_safari.model_policy import ModelPolicy, model_messages, text_view
from localqwen_safari.playing import play_turns
from localqwen_safari.policies import thought_consistent

MISSION = Mission("taught", "find-one", ("zebra",), map=("......", "......", "..~..Z", "......"), start=(2, 1),
                  max_turns=3)
REPLY = ('Thought: I see a zebra at (2, 5). I move down 1 step.\n'
         '<tool_call>\n{"name": "move", "arguments": {"direction": "down", "steps": 1}}\n</tool_call>\n'
         '<tool_call>\n{"name": "declare_found", "arguments": {"species": "unicorn"}}\n</tool_call>')


@pytest.fixture(scope="module")
def taught_engine(tiny_qwen3_path, tmp_path_factory):
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen.testing.tiny_models import teach_reply

    first_turn = model_messages(Episode.start(MISSION), image=None)
    path = teach_reply(tiny_qwen3_path, tmp_path_factory.mktemp("safari_taught"), first_turn, REPLY,
                       tools=tool_schemas(), steps=300)
    with TransformersEngine(path) as engine:
        yield engine


def test_text_view_for_text_only_engines():
    episode = Episode.start(MISSION)
    rows = text_view(episode).splitlines()
    assert len(rows) == 10 and all(len(row) == 10 for row in rows)
    assert rows[4] == "xxx.@~..Zx"  # the agent at view row 4, col 4; the map starts 3 columns in
    assert rows[0] == "x" * 10  # above the map


@pytest.mark.slow  # teaching the tiny model the long safari prompt takes minutes on a busy 2-core CPU
def test_the_taught_model_plays_through_its_tool_calls(taught_engine, tmp_path):
    from localqwen.runtime.engine import GenerationSettings

    policy = ModelPolicy(taught_engine, tmp_path, settings=GenerationSettings(max_new_tokens=160))
    episode = Episode.start(MISSION)
    turns = list(play_turns(episode, policy))
    first = turns[0]
    assert first.decision.calls == [("move", {"direction": "down", "steps": 1}),
                                    ("declare_found", {"species": "unicorn"})], policy.replies[0]
    assert first.decision.thought == "I see a zebra at (2, 5). I move down 1 step."
    assert thought_consistent(first.decision)
    assert first.runs[0].ok and first.runs[0].result == "moved down 1 step, now at row 3, col 1"
    assert not first.runs[1].ok and "species must be one of" in first.runs[1].result
    assert episode.path[:2] == [(2, 1), (3, 1)]
    # the error is in what the model reads next; the episode runs out its turns without a crash
    assert "error: bad arguments for declare_found" in turns[1].context
    assert episode.done and episode.turn == 3 and episode.outcome == "out of turns"
    assert episode.valid_calls >= 1 and episode.calls >= 3
    assert not list(tmp_path.iterdir())  # a text-only engine gets the view as text, no image files
