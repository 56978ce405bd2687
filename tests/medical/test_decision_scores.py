"""The scored yes / no / maybe decision (plugins/localqwen_medical/decision.py): label scores from a
real engine's one prompt pass (the Gemma 270M GGUF through llama.cpp, the tiny Qwen3 through
transformers), the per-model bias changing the decision, and the bias fit that refuses test items."""

from __future__ import annotations

import json
import math

import pytest
from localqwen_medical.decision import LABELS, best_label, decide, decision_messages, label_logprobs
from localqwen_medical.decision_calibration import (
    Calibration,
    calibration_for,
    dev_items,
    fit_bias,
    fit_calibration,
    model_key,
    save_calibration,
)
from localqwen_medical.decision_suite import summarize
from localqwen_medical.evidence import Passage
from localqwen_medical.router_suite import default_data_dir

PASSAGES = [Passage(1, "Stenting reduced restenosis in 80% of the treated patients.", "1", 1.0)]
QUESTION = "Does stenting reduce restenosis?"
HAS_PUBMEDQA = (default_data_dir() / "pubmedqa" / "ori_pqal.json").is_file()


def test_llamacpp_label_scores_are_one_pass_deterministic_and_the_bias_moves_the_decision(gemma_gguf_path):
    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

    with LlamaCppEngine(gemma_gguf_path, n_ctx=1024, n_threads=1) as engine:
        messages = decision_messages(QUESTION, PASSAGES)
        raw = engine.next_token_logprobs(messages, ["yes", "no", "maybe"])
        assert raw.prompt_tokens == engine.count_tokens(messages) and len(set(raw.tokens)) == 3
        assert all(value < 0 for value in raw.logprobs) and sum(math.exp(v) for v in raw.logprobs) <= 1.0

        plain = decide(engine, QUESTION, PASSAGES, calibration=None)
        assert plain.method == "scores" and plain.constrained and not plain.calibrated and plain.bias == {}
        # Softmax over the three labels: they sum to 1 (rounded to 4 decimals in the decision).
        assert sum(math.exp(value) for value in plain.logprobs.values()) == pytest.approx(1.0, abs=1e-3)
        # The labels' mass counts "Yes" as well as "yes" and so on: at least the lower-case forms' share.
        assert sum(math.exp(value) for value in raw.logprobs) - 1e-3 <= plain.label_mass <= 1.0
        assert plain.label == plain.uncalibrated == best_label(plain.logprobs)
        # The same prompt scores the same after a generation in between (no stale cache state).
        engine.chat([{"role": "user", "content": "Say hi"}], settings=GenerationSettings(max_new_tokens=4))
        assert decide(engine, QUESTION, PASSAGES, calibration=None).logprobs == plain.logprobs

        # A bias large enough for the label the model likes least makes it the decision.
        least = min(LABELS, key=lambda label: plain.logprobs[label])
        push = Calibration(model=engine.model_id, bias={least: 50.0})
        biased = decide(engine, QUESTION, PASSAGES, calibration=push)
        assert biased.label == least and biased.uncalibrated == plain.label and biased.calibrated
        assert biased.logprobs == plain.logprobs  # the bias is added after scoring, never to the scores
        with pytest.raises(ValueError, match="at least one token"):
            engine.next_token_logprobs(messages, [""])


def test_transformers_label_scores_match_greedy_decoding(tiny_qwen3_path):
    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    with TransformersEngine(tiny_qwen3_path) as engine:
        messages = decision_messages(QUESTION, PASSAGES)
        first = engine.chat(messages, settings=GenerationSettings(max_new_tokens=1)).text
        scores = engine.next_token_logprobs(messages, [first, "yes", "no", "maybe"])
        # Greedy decoding takes the most likely token, so none of the others can score higher.
        assert scores.logprobs[0] == max(scores.logprobs)
        logprobs, _, _ = label_logprobs(engine, messages)
        assert sum(math.exp(value) for value in logprobs.values()) == pytest.approx(1.0, abs=1e-6)
        assert decide(engine, QUESTION, PASSAGES, calibration=None).method == "scores"


def test_fit_bias_corrects_a_yes_leaning_scorer_and_round_trips(tmp_path):
    # A scorer that knows the answer but adds 2 nats to "yes": raw argmax says yes to everything.
    golds = ["yes"] * 30 + ["no"] * 20 + ["maybe"] * 10
    logprobs = []
    for gold in golds:
        raw = {label: (1.0 if label == gold else 0.0) + (2.0 if label == "yes" else 0.0) for label in LABELS}
        total = math.log(sum(math.exp(v) for v in raw.values()))
        logprobs.append({label: value - total for label, value in raw.items()})
    assert all(best_label(scores) == "yes" for scores in logprobs)
    bias = fit_bias(logprobs, golds)
    assert bias["yes"] < bias["no"] and bias["yes"] < bias["maybe"]
    assert [best_label(scores, bias) for scores in logprobs] == golds
    with pytest.raises(ValueError, match="one gold label per scored item"):
        fit_bias(logprobs, golds[:-1])

    records = [{"pubmed_id": str(n), "gold": gold, "reader": {"label": best_label(scores), "logprobs": scores,
                                                               "own_shown": 1, "seconds": 0.1}}
               for n, (gold, scores) in enumerate(zip(golds, logprobs, strict=True))]
    with pytest.raises(ValueError, match="refusing to fit on 2 PubMedQA test"):
        fit_calibration(records, test_ids={"3", "7", "not-there"}, model="m")
    fitted = fit_calibration(records, test_ids={"not-there"}, model="Some-Model.gguf")
    assert fitted.fit_report["accuracy_uncalibrated"] == 0.5 and fitted.fit_report["accuracy_calibrated"] == 1.0
    path = save_calibration(fitted, tmp_path / "calibration.json")
    save_calibration(Calibration(model="other", bias={"no": 1.0}), path)  # a second model keeps the first
    assert calibration_for("/models/some-model.gguf", path).bias == fitted.bias
    assert calibration_for("other", path).bias == {"no": 1.0} and calibration_for("unknown", path) is None
    assert model_key("dir/Qwen.GGUF") == "qwen" and "models" in json.loads(path.read_text())

    # The report gives both accuracies from the same stored scores.
    report = summarize(records, bias=fitted.bias)["settings"]["reader"]["from_scores"]
    assert report["uncalibrated"]["accuracy"] == 0.5 and report["calibrated"]["accuracy"] == 1.0
    assert report["uncalibrated"]["predicted_labels"]["yes"] == 60
    assert report["calibrated_vs_uncalibrated"]["right_only_calibrated"] == 30
    assert summarize(records)["settings"]["reader"]["from_scores"]["calibrated"] is None


@pytest.mark.skipif(not HAS_PUBMEDQA, reason="../shared/data/pubmedqa is not here")
def test_the_dev_split_is_the_expert_items_outside_the_test_set():
    items = dev_items(default_data_dir())
    test = json.loads((default_data_dir() / "pubmedqa" / "test_set.json").read_text())
    assert len(items) == 500 and not set(items) & set(test)
