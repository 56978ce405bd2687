"""The short version of bench/bench_training_length_buckets.py: on real safari rows and the trainer's
own sampler, buckets by a row's JSON character count put one species per batch (the bug that kept
the tiny safari model from reading its questions), and buckets by token counts, what the trainer
uses now, do not."""

from __future__ import annotations

from bench_scripts import bench_script


def load_bench():
    return bench_script("bench_training_length_buckets")


def test_character_buckets_sort_questions_by_species_and_token_buckets_do_not(tmp_path):
    report = load_bench().main(["--episodes", "12", "--seeds", "2", "--json", str(tmp_path / "r.json")])
    questions = report["grounding questions"]
    assert questions["answers"] == 4 and questions["rows"] > 300
    assert questions["characters (before the fix)"]["ratio_to_random"] > 1.5
    assert questions["tokens (the trainer now)"]["ratio_to_random"] < 1.2
    assert (tmp_path / "r.json").is_file()


def test_answer_labels():
    bench = load_bench()
    question = {"messages": [{"role": "user", "content": [{"type": "image", "image": "x.png"},
                                                          {"type": "text", "text": "Where is the lion?"}]},
                             {"role": "assistant", "content": "No lion in view."}]}
    reply = {"messages": [{"role": "user", "content": "find-one: zebra."},
                          {"role": "assistant", "content": "Thought: ...", "tool_calls": [
                              {"type": "function", "function": {"name": "move",
                                                                "arguments": {"direction": "up", "steps": 2}}},
                              {"type": "function", "function": {"name": "update_notepad",
                                                                "arguments": '{"text": "x"}'}}]}]}
    assert bench.answer_of(question) == "lion"
    assert bench.answer_of(reply) == "move up + update_notepad"
    assert bench.purity(["a", "a", "b", "b"], [0, 1, 2, 3], 2) == 1.0
    assert bench.purity(["a", "a", "b", "b"], [0, 2, 1, 3], 2) == 0.5
