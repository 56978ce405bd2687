"""The real-model benchmarks' code paths (bench/bench_medical_pubmedqa.py, bench_medical_safety.py
--critic-alone): their scoring on hand-made records, and each bench mode run end to end with the
Gemma 270M GGUF standing in for the real 1.5B model (scoring the three labels in one prompt pass)."""

from __future__ import annotations

import json
import math

import pytest
from bench_scripts import bench_script
from localqwen_medical.critic_eval import cases_for, summarize_critic
from localqwen_medical.decision import LABEL_GRAMMAR, LABELS, decision_messages, parse_label
from localqwen_medical.decision_suite import mcnemar_p, seeded_order, summarize, wilson
from localqwen_medical.evidence import Passage
from localqwen_medical.router_suite import default_data_dir

HAS_PUBMEDQA = (default_data_dir() / "pubmedqa" / "test_set.json").is_file()


def bench(name: str):
    return bench_script(name)


def record(gold: str, reader: str | None, retrieved: str | None) -> dict:
    def entry(label):
        return {"label": label, "own_shown": 1, "seconds": 1.0, "prompt_tokens": 10}
    return {"pubmed_id": gold + str(reader) + str(retrieved), "gold": gold, "reader": entry(reader),
            "retrieved": entry(retrieved)}


def test_decision_scoring_baseline_confusion_and_paired_test():
    records = [record("yes", "yes", "yes"), record("yes", "no", "yes"), record("no", "no", "yes"),
               record("no", "no", "no"), record("maybe", "yes", None)]
    report = summarize(records, seed=1)
    assert report["majority_baseline"]["accuracy"] == 0.4 and report["gold_labels"] == {"yes": 2, "no": 2, "maybe": 1}
    reader, retrieved = report["settings"]["reader"], report["settings"]["retrieved"]
    assert reader["correct"] == 3 and reader["accuracy"] == 0.6 and reader["above_majority_by"] == 0.2
    assert reader["confusion_gold_by_predicted"]["yes"] == {"yes": 1, "no": 1, "maybe": 0, "none": 0}
    assert retrieved["predicted_labels"]["none"] == 1 and retrieved["confusion_gold_by_predicted"]["maybe"]["none"] == 1
    assert report["paired"] == {"right_only_reader": 1, "right_only_retrieved": 1, "mcnemar_p": 1.0, "same_label": 2}
    assert wilson(0, 0) == [0.0, 0.0] and wilson(55, 100) == [0.452, 0.644]
    assert mcnemar_p(0, 6) == 0.0312
    with pytest.raises(ValueError, match="no decided items"):
        summarize([])


def test_the_label_prompt_and_parser():
    passages = [Passage(1, "Stenting reduced restenosis.", "1", 1.0)]
    messages = decision_messages("Does stenting reduce restenosis?", passages)
    assert "[Evidence 1] Stenting reduced restenosis." in messages[1]["content"]
    assert "(none)" in decision_messages("Does it?", [])[1]["content"]
    assert parse_label("Maybe, the evidence is mixed") == "maybe" and parse_label("Unclear.") is None
    assert parse_label("It is not known; no.") == "no"
    with pytest.raises(ValueError, match="empty"):
        decision_messages("  ", passages)


def test_critic_scoring_per_layer_and_class():
    def case(expected, rules, critic, combined=None):
        return {"family": "missed_emergency", "expected": expected, "rules": rules, "critic": critic,
                "combined": combined if combined is not None else sorted({*rules, *critic}),
                "combined_by": "same prompt as the critic alone", "critic_error": None, "seconds": 2.0}

    records = [case("missed_emergency", ["missed_emergency"], []), case("missed_emergency", [], ["missed_emergency"]),
               case("safe", [], ["missed_emergency"]), case("safe", [], []), case("safe", [], ["off_scope"])]
    result = summarize_critic(records, model="m")
    critic = result["layers"]["critic"]["classes"]["missed_emergency"]
    assert (critic["tp"], critic["fn"], critic["fp"], critic["tn"]) == (1, 1, 1, 2) and critic["recall"] == 0.5
    combined = result["layers"]["combined"]["classes"]["missed_emergency"]
    assert combined["recall"] == 1.0 and combined["false_alarm_rate"] == 0.3333 and not combined["meets_target"]
    assert result["layers"]["critic"]["safe_drafts_with_any_finding"] == 2 and result["layers"]["rules"]["safe_drafts_with_any_finding"] == 0
    # any prefix of the critic cases covers every class with both labels
    first = cases_for(per_class=3)[:8]
    assert {(c.family, c.expected == "safe") for c in first} == {(f, s) for f in {c.family for c in first} for s in (True, False)}


@pytest.mark.slow  # the Gemma 270M GGUF scoring three ~400-token prompts: 22 s at load 4.5 (sampling with a grammar took 101 s)
@pytest.mark.skipif(not HAS_PUBMEDQA, reason="../shared/data/pubmedqa is not here")
def test_pubmedqa_bench_scores_the_labels_resumes_and_fits_on_dev_only(gemma_gguf_path, tmp_path):
    module = bench("bench_medical_pubmedqa")
    records, calibration = tmp_path / "records.jsonl", tmp_path / "calibration.json"
    common = ["--model", str(gemma_gguf_path), "--limit", "1", "--threads", "1", "--calibration", str(calibration)]
    report = module.main([*common, "--records", str(records)])
    saved = json.loads(records.read_text())
    assert saved["pubmed_id"] == seeded_order(module_items(), 13)[0]
    for setting in ("reader", "retrieved"):
        entry = saved[setting]
        if not entry["insufficient"]:  # one prompt pass scored the three labels; no reply was sampled
            assert entry["method"] == "scores" and entry["constrained"] and entry["raw"] == ""
            assert sum(math.exp(value) for value in entry["logprobs"].values()) == pytest.approx(1.0, abs=1e-3)
            assert entry["label"] == entry["uncalibrated"] and not entry["calibrated"]  # no fit in this file yet
        summary = report["settings"][setting]
        assert set(summary) >= {"accuracy", "wilson95", "confusion_gold_by_predicted", "vs_majority_mcnemar_p"}
    assert report["settings"]["reader"]["from_scores"]["calibrated"] is None
    assert report["items"] == 1 and report["split"] == "test" and report["majority_baseline"]["label"] == "yes"
    again = module.main(["--limit", "1", "--records", str(records), "--report-only", "--calibration", str(calibration)])
    assert again["settings"] == report["settings"]  # no model loaded
    with pytest.raises(SystemExit):  # --fit on the test split is refused before any work
        module.main([*common, "--fit", "--records", str(records)])

    dev_records = tmp_path / "dev.jsonl"
    dev = module.main([*common, "--split", "dev", "--settings", "reader", "--records", str(dev_records), "--fit"])
    fitted = json.loads(calibration.read_text())["models"][gemma_gguf_path.stem.lower()]
    assert fitted["items"] == 1 and "dev split" in fitted["source"] and set(fitted["bias"]) == set(LABELS)
    assert dev["split"] == "dev" and dev["calibration"]["bias"] == fitted["bias"]
    assert json.loads(dev_records.read_text())["pubmed_id"] not in module_items()
    assert LABEL_GRAMMAR == 'root ::= "yes" | "no" | "maybe"'


def module_items():
    from localqwen_medical.grounding_suite import load_items

    return load_items()


def test_critic_alone_bench_runs_and_reports_three_layers(tiny_qwen3_path, tmp_path):
    # The tiny random Qwen3 (transformers: no grammar, so its reply is whatever it writes) keeps this
    # quick; tests/medical/test_critic_parse.py checks the schema-forced critic on the Gemma GGUF.
    records = tmp_path / "critic.jsonl"
    argv = ["--model", str(tiny_qwen3_path), "--critic-alone", "--families", "missed_emergency", "--per-class", "1",
            "--critic-tokens", "12", "--records", str(records)]
    result = bench("bench_medical_safety").main(argv)
    assert result["cases"] == 2 and result["unsafe"] == 1 and result["safe"] == 1
    saved = [json.loads(line) for line in records.read_text().splitlines()]
    assert [r["expected"] for r in saved] == ["missed_emergency", "safe"]
    assert saved[0]["rules"] == ["missed_emergency"] and saved[1]["rules"] == []  # the rules catch the planted one
    assert saved[0]["combined_by"] == "rules already fired the planted class"
    assert saved[1]["combined_by"] == "same prompt as the critic alone"
    assert result["critic_errors"] == sum(r["critic_error"] is not None for r in saved)
    assert result["critic_with_grammar"] == 0  # transformers cannot force the schema
    for layer in ("rules", "critic", "combined"):
        assert set(result["layers"][layer]["classes"]["missed_emergency"]) >= {"tp", "fn", "fp", "tn", "recall"}
    assert result["layers"]["rules"]["classes"]["missed_emergency"]["recall"] == 1.0
    assert bench("bench_medical_safety").main([*argv, "--report-only"]) == result  # from the records, no model
