"""PubMedQA yes / no / maybe accuracy through the plugin's own grounded path (issue 13: above the
55.2% majority baseline with a real instruction model).

Two evidence settings per question, on the same items so they can be compared pairwise:

- ``reader``: the question's own abstract, its sections numbered ``[Evidence n]`` (the PubMedQA
  "reasoning-required" setting: does the model read the evidence right?);
- ``retrieved``: what the pipeline's ``evidence.gather`` finds for the question in the 1,689-passage
  knowledge base (the plugin's default k = 5, its relevance thresholds). When nothing passes them the
  plugin answers "insufficient evidence" and cites nothing; that answer is scored as "maybe" (the
  record says ``insufficient``) rather than asking the model without evidence.

The label comes from ``decision.decide``: scored (the three labels' next-token log-probabilities
from one prompt evaluation) where the engine can, else forced by ``decision.LABEL_GRAMMAR``. A
scored record keeps the three log-probabilities, so the report gives the accuracy without and
with the per-model bias (``decision_calibration.py``) from the same model pass. Items are a seeded
shuffle of a split's questions (``test``: the 500 of test_set.json; ``dev``: the other 500
expert-labelled ones, for fitting), decided one by one into records (one dict per item, written as
they finish), and the report is computed from the records, so a run cut short still reports an
unbiased random subset.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from localqwen.vocabulary.statistics import mcnemar_p as exact_mcnemar_p
from localqwen.vocabulary.statistics import wilson_interval
from localqwen_medical.decision import AUTO, LABELS, best_label, decide
from localqwen_medical.decision_calibration import Calibration
from localqwen_medical.evidence import Passage, gather

SETTINGS = ("reader", "retrieved")
MAJORITY_LABEL = "yes"  # PubMedQA test: 276 yes, 169 no, 55 maybe of 500 (55.2%)
DEFAULT_K = 5  # the chat's default passages per answer (settings.SessionChoices.k)


def wilson(hits: int, n: int, z: float = 1.96) -> list[float]:
    """95% Wilson score interval for ``hits`` of ``n``, rounded for the report ([0, 0] for n = 0)."""
    return [round(bound, 3) for bound in wilson_interval(hits, n, z)]


def mcnemar_p(only_first: int, only_second: int) -> float:
    """Exact two-sided McNemar p-value, rounded for the report."""
    return round(exact_mcnemar_p(only_first, only_second), 4)


def seeded_order(items: dict[str, dict[str, Any]], seed: int) -> list[str]:
    """The PubMed ids in a seeded random order (a prefix of it is a random subset)."""
    ids = sorted(items)
    random.Random(seed).shuffle(ids)
    return ids


def own_abstract(pubmed_id: str, item: dict[str, Any]) -> list[Passage]:
    return [Passage(number, text, pubmed_id, 1.0) for number, text in enumerate(item["CONTEXTS"], start=1)]


def decide_item(engine: Any, index: Any, pubmed_id: str, item: dict[str, Any], *,
                settings: Iterable[str] = SETTINGS, k: int = DEFAULT_K,
                calibration: Calibration | str | None = AUTO) -> dict[str, Any]:
    """One question in each setting: the record (gold label, and per setting the predicted label,
    how it came about, the evidence shown and the seconds)."""
    unknown = [name for name in settings if name not in SETTINGS]
    if unknown:
        raise ValueError(f"unknown evidence setting(s) {unknown} (known: {', '.join(SETTINGS)})")
    record: dict[str, Any] = {"pubmed_id": pubmed_id, "gold": item["final_decision"]}
    for name in settings:
        started = time.perf_counter()
        if name == "reader":
            passages = own_abstract(pubmed_id, item)
        else:
            passages = gather(index, [item["QUESTION"]], k=k).passages
        entry: dict[str, Any] = {"shown": [p.source for p in passages],
                                 "own_shown": sum(p.source == pubmed_id for p in passages)}
        if not passages:
            entry.update(label="maybe", insufficient=True, raw="", prompt_tokens=0)
        else:
            decision = decide(engine, item["QUESTION"], passages, calibration=calibration)
            entry.update(label=decision.label, insufficient=False, raw=decision.raw,
                         constrained=decision.constrained, prompt_tokens=decision.prompt_tokens,
                         method=decision.method)
            if decision.method == "scores":
                entry.update(logprobs=decision.logprobs, uncalibrated=decision.uncalibrated,
                             calibrated=decision.calibrated, bias=decision.bias, label_mass=decision.label_mass)
        entry["seconds"] = round(time.perf_counter() - started, 2)
        record[name] = entry
    return record


def confusion(records: list[dict[str, Any]], setting: str) -> dict[str, dict[str, int]]:
    """gold -> predicted -> count (predicted ``none`` when an unconstrained reply named no label)."""
    return confusion_of([record["gold"] for record in records], [record[setting]["label"] for record in records])


def confusion_of(golds: list[str], predicted: list[str | None]) -> dict[str, dict[str, int]]:
    table = {gold: dict.fromkeys([*LABELS, "none"], 0) for gold in LABELS}
    for gold, label in zip(golds, predicted, strict=True):
        table[gold][label or "none"] += 1
    return table


def score_labels(golds: list[str], predicted: list[str | None]) -> dict[str, Any]:
    """Accuracy with its Wilson interval, the label spread, the confusion matrix and McNemar
    against always answering the majority label, for one list of predictions."""
    n = len(golds)
    hits = sum(label == gold for label, gold in zip(predicted, golds, strict=True))
    majority_hits = sum(gold == MAJORITY_LABEL for gold in golds)
    spread = Counter(label or "none" for label in predicted)
    only_model = sum(label == gold != MAJORITY_LABEL for label, gold in zip(predicted, golds, strict=True))
    only_majority = sum(label != gold == MAJORITY_LABEL for label, gold in zip(predicted, golds, strict=True))
    return {"accuracy": round(hits / n, 3), "correct": hits, "wilson95": wilson(hits, n),
            "above_majority_by": round((hits - majority_hits) / n, 3),
            "predicted_labels": {label: spread[label] for label in [*LABELS, "none"]},
            "confusion_gold_by_predicted": confusion_of(golds, predicted),
            "vs_majority_mcnemar_p": mcnemar_p(only_model, only_majority),
            "vs_majority_discordant": {"right_only_model": only_model, "right_only_majority": only_majority}}


def from_scores(records: list[dict[str, Any]], setting: str, bias: dict[str, float] | None) -> dict[str, Any] | None:
    """Accuracy without and with ``bias`` from the stored label scores of ``setting`` (the same
    model pass gives both); None when not every decided item was scored. Items the plugin answered
    "insufficient evidence" (no scores) keep their "maybe" in both."""
    entries = [record[setting] for record in records]
    if not any("logprobs" in entry for entry in entries) or any(
            "logprobs" not in entry and not entry.get("insufficient") for entry in entries):
        return None
    golds = [record["gold"] for record in records]

    def labels(with_bias: dict[str, float] | None) -> list[str | None]:
        return [best_label(entry["logprobs"], with_bias) if "logprobs" in entry else entry["label"] for entry in entries]

    scored = [entry for entry in entries if "logprobs" in entry]
    result: dict[str, Any] = {
        "uncalibrated": score_labels(golds, labels(None)),
        "mean_label_probability": {label: round(sum(math.exp(e["logprobs"][label]) for e in scored) / len(scored), 3)
                                   for label in LABELS},
        "mean_label_mass": round(sum(e.get("label_mass") or 0.0 for e in scored) / len(scored), 3),
    }
    if bias:
        result["calibrated"] = {**score_labels(golds, labels(bias)), "bias": bias}
        base = [label == gold for label, gold in zip(labels(None), golds, strict=True)]
        fixed = [label == gold for label, gold in zip(labels(bias), golds, strict=True)]
        only_fixed = sum(b and not a for a, b in zip(base, fixed, strict=True))
        only_base = sum(a and not b for a, b in zip(base, fixed, strict=True))
        result["calibrated_vs_uncalibrated"] = {"right_only_calibrated": only_fixed, "right_only_uncalibrated": only_base,
                                                "mcnemar_p": mcnemar_p(only_fixed, only_base)}
    else:
        result["calibrated"] = None
        result["note"] = "no fitted bias for this model: the decision used the raw scores"
    return result


def summarize(records: list[dict[str, Any]], *, seed: int | None = None, model: str = "",
              bias: dict[str, float] | None = None, split: str = "test") -> dict[str, Any]:
    """The report: per setting accuracy with its Wilson interval, the confusion matrix and the label
    spread; with label scores, the accuracy without and with ``bias`` from the same scores; the
    majority baseline on the same items; the paired comparison of the settings."""
    if not records:
        raise ValueError("no decided items to summarize")
    n = len(records)
    golds = Counter(record["gold"] for record in records)
    majority_hits = golds[MAJORITY_LABEL]
    report: dict[str, Any] = {
        "items": n, "split": split, "seed": seed, "model": model,
        "gold_labels": {label: golds[label] for label in LABELS},
        "majority_baseline": {"label": MAJORITY_LABEL, "accuracy": round(majority_hits / n, 3),
                              "wilson95": wilson(majority_hits, n), "test_set_accuracy": 0.552},
        "settings": {},
    }
    present = [name for name in SETTINGS if all(name in record for record in records)]
    for name in present:
        seconds = [record[name]["seconds"] for record in records]
        methods = Counter(record[name].get("method", "grammar") for record in records if not record[name].get("insufficient"))
        report["settings"][name] = {
            # The labels as decided at run time (with the bias the model had then, if any).
            **score_labels([record["gold"] for record in records], [record[name]["label"] for record in records]),
            "decided_by": dict(methods),
            "insufficient_evidence": sum(bool(record[name].get("insufficient")) for record in records),
            "own_abstract_passages_shown": round(sum(record[name]["own_shown"] for record in records) / n, 2),
            "mean_prompt_tokens": round(sum(record[name].get("prompt_tokens", 0) for record in records) / n, 1),
            "seconds_per_item": round(sum(seconds) / n, 2),
        }
        scores = from_scores(records, name, bias)
        if scores is not None:
            report["settings"][name]["from_scores"] = scores
    if len(present) == 2:
        first, second = present
        right = [(r[first]["label"] == r["gold"], r[second]["label"] == r["gold"]) for r in records]
        only_first = sum(a and not b for a, b in right)
        only_second = sum(b and not a for a, b in right)
        report["paired"] = {f"right_only_{first}": only_first, f"right_only_{second}": only_second,
                            "mcnemar_p": mcnemar_p(only_first, only_second),
                            "same_label": sum(r[first]["label"] == r[second]["label"] for r in records)}
    return report
