"""PubMedQA yes / no / maybe accuracy through the plugin's own grounded path (issue 13: above the
55.2% majority baseline with a real instruction model).

Two evidence settings per question, on the same items so they can be compared pairwise:

- ``reader``: the question's own abstract, its sections numbered ``[Evidence n]`` (the PubMedQA
  "reasoning-required" setting: does the model read the evidence right?);
- ``retrieved``: what the pipeline's ``evidence.gather`` finds for the question in the 1,689-passage
  knowledge base (the plugin's default k = 5, its relevance thresholds). When nothing passes them the
  plugin answers "insufficient evidence" and cites nothing; that answer is scored as "maybe" (the
  record says ``insufficient``) rather than asking the model without evidence.

The label is forced by ``decision.LABEL_GRAMMAR``. Items are a seeded shuffle of the 500 test
questions, decided one by one into records (one dict per item, written as they finish), and the
report is computed from the records, so a run cut short still reports an unbiased random subset.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from localqwen.vocabulary.statistics import mcnemar_p as exact_mcnemar_p
from localqwen.vocabulary.statistics import wilson_interval
from localqwen_medical.decision import LABELS, decide
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
                settings: Iterable[str] = SETTINGS, k: int = DEFAULT_K) -> dict[str, Any]:
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
            decision = decide(engine, item["QUESTION"], passages)
            entry.update(label=decision.label, insufficient=False, raw=decision.raw,
                         constrained=decision.constrained, prompt_tokens=decision.prompt_tokens)
        entry["seconds"] = round(time.perf_counter() - started, 2)
        record[name] = entry
    return record


def confusion(records: list[dict[str, Any]], setting: str) -> dict[str, dict[str, int]]:
    """gold -> predicted -> count (predicted ``none`` when an unconstrained reply named no label)."""
    table = {gold: dict.fromkeys([*LABELS, "none"], 0) for gold in LABELS}
    for record in records:
        table[record["gold"]][record[setting]["label"] or "none"] += 1
    return table


def summarize(records: list[dict[str, Any]], *, seed: int | None = None, model: str = "") -> dict[str, Any]:
    """The report: per setting accuracy with its Wilson interval, the confusion matrix and the label
    spread; the majority baseline on the same items; the paired comparison of the settings."""
    if not records:
        raise ValueError("no decided items to summarize")
    n = len(records)
    golds = Counter(record["gold"] for record in records)
    majority_hits = golds[MAJORITY_LABEL]
    report: dict[str, Any] = {
        "items": n, "seed": seed, "model": model,
        "gold_labels": {label: golds[label] for label in LABELS},
        "majority_baseline": {"label": MAJORITY_LABEL, "accuracy": round(majority_hits / n, 3),
                              "wilson95": wilson(majority_hits, n), "test_set_accuracy": 0.552},
        "settings": {},
    }
    present = [name for name in SETTINGS if all(name in record for record in records)]
    for name in present:
        hits = sum(record[name]["label"] == record["gold"] for record in records)
        predicted = Counter(record[name]["label"] or "none" for record in records)
        seconds = [record[name]["seconds"] for record in records]
        report["settings"][name] = {
            "accuracy": round(hits / n, 3), "correct": hits, "wilson95": wilson(hits, n),
            "above_majority_by": round((hits - majority_hits) / n, 3),
            "predicted_labels": {label: predicted[label] for label in [*LABELS, "none"]},
            "confusion_gold_by_predicted": confusion(records, name),
            "insufficient_evidence": sum(bool(record[name].get("insufficient")) for record in records),
            "own_abstract_passages_shown": round(sum(record[name]["own_shown"] for record in records) / n, 2),
            "mean_prompt_tokens": round(sum(record[name].get("prompt_tokens", 0) for record in records) / n, 1),
            "seconds_per_item": round(sum(seconds) / n, 1),
        }
        # McNemar against always answering "yes" on the same items.
        only_model = sum(record[name]["label"] == record["gold"] != MAJORITY_LABEL for record in records)
        only_majority = sum(record[name]["label"] != record["gold"] == MAJORITY_LABEL for record in records)
        report["settings"][name]["vs_majority_mcnemar_p"] = mcnemar_p(only_model, only_majority)
    if len(present) == 2:
        first, second = present
        right = [(r[first]["label"] == r["gold"], r[second]["label"] == r["gold"]) for r in records]
        only_first = sum(a and not b for a, b in right)
        only_second = sum(b and not a for a, b in right)
        report["paired"] = {f"right_only_{first}": only_first, f"right_only_{second}": only_second,
                            "mcnemar_p": mcnemar_p(only_first, only_second),
                            "same_label": sum(r[first]["label"] == r[second]["label"] for r in records)}
    return report
