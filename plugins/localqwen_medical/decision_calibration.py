"""Per-model label biases for the yes / no / maybe decision (``decision.decide``), fitted on
PubMedQA items that are not in its test set.

Small chat models lean to "yes" whatever the evidence says. The correction is a bias per label
added to the three label log-probabilities before the highest is taken: multinomial logistic
regression with only intercepts (the three scores as fixed offsets), fitted by maximum likelihood
on expert-labelled items. At the optimum the average calibrated probability of each label equals
how often it is the answer in the fitting items, the data-driven form of a log-prior correction
(Zhao et al. 2021 fit the same kind of bias from a content-free input instead of labelled data).

Where the items come from: ``pubmedqa/ori_pqal.json`` holds PubMedQA's 1,000 expert-labelled
questions; its ``test_set.json`` is 500 of them. The other 500 (``dev_items``) are the only ones a
fit may use: ``fit_calibration`` refuses any test question.

The fits live in ``decision_calibration.json`` beside this file, one entry per model (the engine's
``model_id``, e.g. a GGUF's file name without ``.gguf``), with where and how each was fitted.
``bench/bench_medical_pubmedqa.py --split dev --fit`` writes one. A model without an entry gets no
bias (``calibration_for`` returns None and the decision says ``calibrated: false``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

CALIBRATION_FILE = Path(__file__).with_name("decision_calibration.json")
LABELS = ("yes", "no", "maybe")  # the same order as decision.LABELS (not imported: decision imports this)
METHOD = "label intercepts by maximum likelihood (multinomial logistic regression, scores as offsets)"


@dataclass(frozen=True)
class Calibration:
    model: str
    bias: dict[str, float]  # added to each label's log-probability before the argmax
    method: str = METHOD
    source: str = ""  # which items, e.g. "PubMedQA ori_pqal.json minus test_set.json, seeded 150"
    items: int = 0
    setting: str = "reader"  # the evidence the fitting items were decided on
    fitted_at: str = ""
    fit_report: dict[str, Any] = field(default_factory=dict)  # accuracy on the fitting items, before and after


def model_key(model_id: str) -> str:
    """How a model is named in the file: lower case, without a ``.gguf`` suffix or folders."""
    name = Path(str(model_id)).name.lower()
    return name[: -len(".gguf")] if name.endswith(".gguf") else name


def load_calibrations(path: Path | None = None) -> dict[str, Calibration]:
    path = path or CALIBRATION_FILE
    if not path.is_file():
        return {}
    # decide() asks for every question: the file is read again only when it changed (a new fit).
    return _read_calibrations(path, path.stat().st_mtime_ns)


@lru_cache(maxsize=8)
def _read_calibrations(path: Path, modified_ns: int) -> dict[str, Calibration]:
    try:
        data = json.loads(path.read_text("utf-8"))
        return {model_key(name): Calibration(**{**entry, "model": name}) for name, entry in data["models"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a decision calibration file ({{\"models\": {{name: {{bias, ...}}}}}}): {exc}") from exc


def calibration_for(model_id: str, path: Path | None = None) -> Calibration | None:
    """The fitted biases for ``model_id``, or None when it has none (then no bias is added)."""
    return load_calibrations(path).get(model_key(model_id)) if model_id else None


def save_calibration(calibration: Calibration, path: Path | None = None) -> Path:
    """Add or replace ``calibration``'s model in the file (other models' fits are kept)."""
    from localqwen.atomic import atomic_write_text

    path = path or CALIBRATION_FILE
    data = json.loads(path.read_text("utf-8")) if path.is_file() else {}
    data.setdefault("about", "Per-model yes/no/maybe biases for plugins/localqwen_medical/decision.py; "
                             "see decision_calibration.py for how they are fitted and on which items.")
    entry = asdict(calibration)
    name = entry.pop("model")
    data.setdefault("models", {})[name] = entry
    atomic_write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def dev_items(data_dir: Path) -> dict[str, dict[str, Any]]:
    """The expert-labelled PubMedQA questions that are not in its test set (500 of 1,000)."""
    source, test = data_dir / "pubmedqa" / "ori_pqal.json", data_dir / "pubmedqa" / "test_set.json"
    for path in (source, test):
        if not path.is_file():
            raise FileNotFoundError(f"PubMedQA file missing: {path} (see ../shared/data/README.md, or pass --data-dir)")
    test_ids = set(json.loads(test.read_text("utf-8")))
    return {pid: item for pid, item in json.loads(source.read_text("utf-8")).items() if pid not in test_ids}


def fit_bias(logprobs: list[dict[str, float]], golds: list[str], *, l2: float = 1e-3,
             steps: int = 20000) -> dict[str, float]:
    """The per-label biases maximising the mean log-likelihood of ``golds`` under
    softmax(logprobs + bias), with a small L2 penalty that keeps them finite (a label that never
    is the answer would otherwise be pushed to minus infinity) and makes the solution unique.
    The objective is concave, so plain gradient ascent reaches the optimum."""
    if not logprobs or len(logprobs) != len(golds):
        raise ValueError(f"fit_bias needs one gold label per scored item; got {len(logprobs)} scores, {len(golds)} labels")
    unknown = sorted(set(golds) - set(LABELS))
    if unknown:
        raise ValueError(f"unknown gold label(s) {unknown}; expected {LABELS}")
    import numpy as np

    scores = np.array([[item[label] for label in LABELS] for item in logprobs], dtype=np.float64)
    observed = np.array([[gold == label for label in LABELS] for gold in golds], dtype=np.float64).mean(axis=0)
    values = np.zeros(len(LABELS))
    for _ in range(steps):
        shifted = scores + values
        weights = np.exp(shifted - shifted.max(axis=1, keepdims=True))
        expected = (weights / weights.sum(axis=1, keepdims=True)).mean(axis=0)
        gradient = observed - expected - l2 * values
        values += 2.0 * gradient  # the mean log-likelihood's curvature is at most 1/2
        if np.abs(gradient).max() < 1e-8:
            break
    bias = {label: float(value) for label, value in zip(LABELS, values, strict=True)}
    return {label: round(value, 4) for label, value in bias.items()}


def fit_calibration(records: list[dict[str, Any]], *, test_ids: set[str], model: str, setting: str = "reader",
                    source: str = "") -> Calibration:
    """Fit the biases from scored bench records (``record[setting]["logprobs"]`` and
    ``record["gold"]``). Refuses any record whose question is in the test set."""
    leaked = sorted(record["pubmed_id"] for record in records if record["pubmed_id"] in test_ids)
    if leaked:
        raise ValueError(f"refusing to fit on {len(leaked)} PubMedQA test question(s) (e.g. {leaked[:3]}); "
                         "fit on the dev split (ori_pqal.json minus test_set.json) only")
    scored = [record for record in records if record.get(setting, {}).get("logprobs")]
    if not scored:
        raise ValueError(f"no record has label scores in the {setting!r} setting (was the engine able to score?)")
    logprobs = [record[setting]["logprobs"] for record in scored]
    golds = [record["gold"] for record in scored]
    bias = fit_bias(logprobs, golds)

    def accuracy(with_bias: dict[str, float]) -> float:
        picks = [max(LABELS, key=lambda label: scores[label] + with_bias.get(label, 0.0)) for scores in logprobs]
        return round(sum(pick == gold for pick, gold in zip(picks, golds, strict=True)) / len(golds), 3)

    report = {"accuracy_uncalibrated": accuracy({}), "accuracy_calibrated": accuracy(bias),
              "gold_labels": {label: golds.count(label) for label in LABELS},
              "note": "accuracy on the fitting items themselves (optimistic); the test split is the measure"}
    return Calibration(model=model, bias=bias, source=source, items=len(scored), setting=setting,
                       fitted_at=time.strftime("%Y-%m-%d", time.gmtime()), fit_report=report)
