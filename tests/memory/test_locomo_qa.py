"""The pure parts of the real-model LoCoMo QA bench (bench/bench_memory_real.py): no model here."""

from __future__ import annotations

import json

import pytest
from localqwen_memory.locomo_eval import session_time
from localqwen_memory.locomo_qa import (
    choose_questions,
    iso_dates_as_words,
    locomo_f1,
    normalize_answer,
    tail_cut,
    token_f1,
    transcript_lines,
)


def test_normalisation_drops_case_punctuation_commas_and_articles():
    assert normalize_answer("The Pottery-class, and a Dog!") == "potteryclass dog"
    assert normalize_answer(2022) == "2022"


def test_token_f1_counts_shared_tokens():
    assert token_f1("7 May 2023", "7 May, 2023") == 1.0
    assert token_f1("2023-05-07", "7 May 2023") == 0.0
    # 2 shared of 3 predicted and 2 gold tokens: precision 2/3, recall 1
    assert token_f1("in May 2023", "May 2023") == pytest.approx(0.8)
    assert token_f1("", "Paris") == 0.0


def test_iso_dates_are_rewritten_as_locomo_writes_them():
    assert iso_dates_as_words("on 2023-05-07, not 2023-13-01") == "on 7 May 2023, not 2023-13-01"
    assert locomo_f1(iso_dates_as_words("2023-05-07"), "7 May 2023", 2) == 1.0


def test_locomo_categories_score_as_the_paper_does():
    # multi-hop: each gold item takes its best predicted item, averaged over the gold items
    assert locomo_f1("painting, pottery", "pottery, painting, hiking", 1) == pytest.approx(2 / 3)
    # open-domain: only the gold answer's part before ";" counts
    assert locomo_f1("likely yes", "Likely yes; she likes it", 3) == 1.0
    assert locomo_f1("single", "Single", 4) == 1.0
    with pytest.raises(ValueError, match="categories 1-4"):
        locomo_f1("x", "y", 5)


def _sample(sample_id: str, categories: list[int]) -> dict:
    return {"sample_id": sample_id, "qa": [{"question": f"q{i}", "answer": i, "category": c}
                                           for i, c in enumerate(categories)]}


def test_the_subset_is_seeded_grouped_by_conversation_and_leaves_category_5_out():
    samples = [_sample("a", [1, 2, 5, 3, 4, 5, 4]), _sample("b", [4, 5, 2, 1])]
    first = choose_questions(samples, 6, seed=3)
    assert [q["id"] for q in first] == [q["id"] for q in choose_questions(samples, 6, seed=3)]
    assert all(q["category"] != 5 for q in first)
    assert [(q["conversation"], q["index"]) for q in first] == sorted((q["conversation"], q["index"]) for q in first)
    assert all(isinstance(q["answer"], str) for q in first)
    with pytest.raises(ValueError, match="only 8"):
        choose_questions(samples, 10, seed=3)


def test_tail_cut_keeps_the_last_whole_lines_within_the_budget():
    words = lambda text: len(text.split())  # noqa: E731 - a tokenizer stand-in: one token a word
    lines = ["one two three", "four five", "six", "seven eight nine ten"]
    text, tokens = tail_cut(lines, words, 6)
    assert text == "six\nseven eight nine ten" and tokens == 5
    assert tail_cut(lines, words, 100) == ("\n".join(lines), 10)
    assert tail_cut(lines, words, 2) == ("", 0)  # even the last line is over
    with pytest.raises(ValueError, match="positive"):
        tail_cut(lines, words, 0)


def test_transcript_dates_each_session():
    turns = [{"session": 1, "date": "1:56 pm on 8 May, 2023", "speaker": "Ann", "text": "hi"},
             {"session": 1, "date": "1:56 pm on 8 May, 2023", "speaker": "Bo", "text": "hello"},
             {"session": 2, "date": "1:14 pm on 25 May, 2023", "speaker": "Ann", "text": "back"}]
    assert transcript_lines(turns) == ["[Session 1, 1:56 pm on 8 May, 2023]", "Ann: hi", "Bo: hello",
                                       "[Session 2, 1:14 pm on 25 May, 2023]", "Ann: back"]
    assert session_time("1:56 pm on 8 May, 2023") is not None
    assert session_time("sometime") is None


def test_the_bench_report_splits_categories_prompt_sizes_and_the_prefix_question():
    from types import SimpleNamespace

    from bench_scripts import bench_script

    bench = bench_script("bench_memory_real")
    questions = choose_questions([_sample("a", [1, 2, 4])], 3, seed=0)
    records = [{**q, "setting": setting, "f1": f1, "prediction": "2023-01-02", "answer": "2 January 2023", "prompt_tokens": tokens, "seconds": seconds, "facts_in_store": 0}
               for q, f1, seconds in zip(questions, (1.0, 0.5, 0.0), (300.0, 10.0, 12.0), strict=True)
               for setting, tokens in (("tail", 8200), ("memory", 500))]
    args = SimpleNamespace(model=None, samples=[{"sample_id": "a"}], seed=0, max_new_tokens=32, threads=1,
                           settings=["tail", "memory"], tail_tokens=8192, k=6)
    report = bench.qa_report(records, questions, args)
    tail = report["settings"]["tail"]
    assert tail["f1"] == 0.5 and tail["per_category"]["multi_hop"] == {"n": 1, "f1": 1.0, "f1_dates_as_words": 1.0}
    assert tail["f1_dates_as_words"] == 1.0  # recomputed from the prediction, the ISO date rewritten
    assert tail["seconds_first_question_per_conversation"] == [300.0] and tail["seconds_mean_after_first"] == 11.0
    assert report["settings"]["memory"]["prompt_tokens_p95"] == 500 and report["answered_in_every_setting"] == 3
    assert report["question_ids"] == ["a:q0", "a:q1", "a:q2"]


def test_extracted_facts_join_the_qa_store_named_deduplicated_and_superseded(tmp_path):
    """The real-model QA and the retrieval evaluation put the extraction records' facts beside the
    raw turns through the plugin's own ``remember`` on a real SQLite store: "the user" becomes the
    turn's speaker, a repeated fact is not added twice, a contradiction supersedes the older value,
    and each fact keeps the turn it came from."""
    from localqwen_memory.locomo_facts import add_extracted_facts
    from localqwen_memory.store import MemoryStore

    from localqwen.storage.database import Database

    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    record = lambda index, speaker, text, attribute=None, value=None: {  # noqa: E731
        "conversation_id": "conv-1", "turn": f"D1:{index + 1}", "session": 1, "message_index": index,
        "speaker": speaker, "at": 1.7e9,
        "facts": [{"fact": text, "subject": "user", "attribute": attribute, "value": value}]}
    records = [record(0, "Ann", "The user lives in Paris.", "home city", "Paris"),
               record(1, "Bo", "The user lives in Rome.", "home city", "Rome"),  # another person: no conflict
               record(2, "Bo", "The user has a dog called Rex."),
               record(3, "Bo", "The user has a dog called Rex."),
               record(4, "Ann", "The user moved to Berlin.", "home city", "Berlin"),
               {**record(5, "Cy", "Not this conversation."), "conversation_id": "conv-2"}]
    decisions = add_extracted_facts(store, records, "conv-1", "conv-1")
    assert [d.action for d, _ in decisions] == ["added", "added", "added", "duplicate", "superseded"]
    assert [turn for _, turn in decisions] == ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5"]
    assert decisions[3][0].memory.id == decisions[2][0].memory.id  # the repeat points at the first
    active = {m.text: m for m in store.list("conv-1")}
    assert set(active) == {"Bo lives in Rome.", "Bo has a dog called Rex.", "Ann moved to Berlin."}
    assert active["Ann moved to Berlin."].subject == "ann" and active["Ann moved to Berlin."].source_message == 4


def test_the_bench_extracts_chosen_conversations_and_names_an_unknown_one(tmp_path, capsys):
    """``--conversation`` picks conversations by id (two processes, one each, in one --work-dir: each
    conversation's records are a file of their own, and the report reads them all), ``--sessions 0``
    means all of them; an id not among the first ``--conversations`` is refused by name.
    ``--report-only``: no model is loaded."""
    from bench_scripts import bench_script
    from localqwen_memory.locomo_eval import default_data, load, turns_of

    if not default_data().is_file():
        pytest.skip(f"LoCoMo data absent: {default_data()}")
    bench = bench_script("bench_memory_real")
    second = load(default_data())[1]
    report = bench.main(["--part", "extraction", "--conversation", second["sample_id"], "--sessions", "0",
                         "--work-dir", str(tmp_path), "--report-only"])
    assert report["conversations"] == [second["sample_id"]] and report["sessions_per_conversation"] == "all"
    assert report["turns_planned"] == len(turns_of(second)) and report["turns_done"] == 0
    first_turn = turns_of(second)[0]
    record = {"conversation_id": second["sample_id"], "turn": first_turn["id"], "session": 1, "message_index": 0,
              "speaker": first_turn["speaker"], "at": 0.0, "path": "raw", "failures": ["no JSON"], "facts": [],
              "seconds": 1.0}
    (tmp_path / "extraction").mkdir()
    (tmp_path / "extraction" / f"{second['sample_id']}.jsonl").write_text(json.dumps(record) + "\n", "utf-8")
    (tmp_path / "extraction" / "conv-other.jsonl").write_text("", "utf-8")  # the other process's file
    report = bench.main(["--part", "extraction", "--sessions", "0", "--work-dir", str(tmp_path), "--report-only"])
    assert report["turns_done"] == 1 and report["paths"]["raw"] == 1 and report["turns_with_parse_failure"] == 1
    # a work dir from before the per-conversation files: its one records file still counts (resumes)
    second_turn = turns_of(second)[1]
    (tmp_path / "extraction.jsonl").write_text(json.dumps({**record, "turn": second_turn["id"], "message_index": 1,
                                                           "path": "json", "failures": []}) + "\n", "utf-8")
    report = bench.main(["--part", "extraction", "--sessions", "0", "--work-dir", str(tmp_path), "--report-only"])
    assert report["turns_done"] == 2 and report["paths"]["json"] == 1
    # a run killed mid-write leaves half a line at the end: left out (that turn is redone), not a crash
    with (tmp_path / "extraction.jsonl").open("a", encoding="utf-8") as out:
        out.write('{"conversation_id": "conv-')
    report = bench.main(["--part", "extraction", "--sessions", "0", "--work-dir", str(tmp_path), "--report-only"])
    assert report["turns_done"] == 2
    with pytest.raises(SystemExit):
        bench.main(["--part", "extraction", "--conversation", "conv-nope", "--report-only", "--work-dir", str(tmp_path)])
    assert "--conversation conv-nope is not among the first 2" in capsys.readouterr().err
