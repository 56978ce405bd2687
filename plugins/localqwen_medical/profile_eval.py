"""``evaluate --suite profile``: how well the profile extractor reads patients.

Two sets: synthetic zh/en dialogues (``profile_dialogues``, every field) and the allergy fields of
HuatuoGPT's ``Med-dialog_100.json`` against our own annotation (``med_dialog_allergies.json``,
ids + labels, how it was labelled is written in the file). Values are compared after
``canonical`` (so 青霉素 == penicillin); "none" stands for a stated "no known allergies".
Scores are micro precision / recall / F1 over (dialogue, value) pairs per field.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localqwen.vocabulary import events as ev
from localqwen_medical.profile import FIELDS, Profile, update_from_turn
from localqwen_medical.profile_dialogues import generate_dialogues
from localqwen_medical.profile_patterns import canonical
from localqwen_medical.router_suite import default_data_dir

ANNOTATION_FILE = Path(__file__).with_name("med_dialog_allergies.json")
TARGET_F1 = 0.9


def profile_values(profile: Profile, field: str) -> set[str]:
    """A field of the profile as comparable values."""
    if field == "allergies":
        values = {canonical(v) for v in profile.values("allergies")}
        return values or ({"none"} if profile.no_known_allergies else set())
    if field in ("medications", "conditions"):
        return {canonical(v) for v in profile.values(field)}
    fact = getattr(profile, field)
    if fact is None:
        return set()
    if field == "age":
        return {str(int(fact.value)) if float(fact.value).is_integer() else str(fact.value)}
    return {str(fact.value).lower()}


def expected_values(expected: dict[str, Any], field: str) -> set[str]:
    value = expected.get(field)
    if value is None:
        return set()
    if isinstance(value, list):
        return {"none" if v == "none" else canonical(v) for v in value}
    return {str(value).lower()}


def score(pairs: list[tuple[set[str], set[str]]]) -> dict[str, Any]:
    """Micro precision / recall / F1 over (predicted, expected) value sets."""
    tp = sum(len(p & e) for p, e in pairs)
    fp = sum(len(p - e) for p, e in pairs)
    fn = sum(len(e - p) for p, e in pairs)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "tp": tp, "fp": fp, "fn": fn}


def load_annotation(path: Path = ANNOTATION_FILE) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["items"]


def run_profile_suite(*, data_dir: str | Path | None = None, dialogues: int = 200, seed: int = 0,
                      engine: Any = None, med_dialog_limit: int | None = None) -> Iterator[Any]:
    """Yield progress and tables; the last event is ``Done`` whose result holds every score.

    ``med_dialog_limit`` scores only that many annotated dialogues (for a slow model): those that
    name an allergen first, then the others in file order."""
    start = time.perf_counter()
    synthetic = generate_dialogues(dialogues, seed)
    per_field: dict[str, list[tuple[set[str], set[str]]]] = {f: [] for f in FIELDS}
    errors: list[dict[str, Any]] = []
    for index, dialogue in enumerate(synthetic):
        profile = Profile()
        for turn, text in enumerate(dialogue.turns, 1):
            update_from_turn(profile, text, turn, engine=engine)
        for field in FIELDS:
            predicted, expected = profile_values(profile, field), expected_values(dialogue.expected, field)
            per_field[field].append((predicted, expected))
            if predicted != expected and len(errors) < 30:
                errors.append({"set": "synthetic", "id": dialogue.id, "field": field,
                               "predicted": sorted(predicted), "expected": sorted(expected)})
        if (index + 1) % 50 == 0 or index + 1 == len(synthetic):
            yield ev.Progress(done=index + 1, total=len(synthetic), message="synthetic dialogues")
    result: dict[str, Any] = {"synthetic": {"dialogues": len(synthetic), "seed": seed,
                                            "fields": {f: score(p) for f, p in per_field.items()}}}
    result["synthetic"]["f1"] = score([pair for pairs in per_field.values() for pair in pairs])["f1"]

    root = Path(data_dir) if data_dir else default_data_dir()
    source = root / "huatuogpt_eval" / "Med-dialog_100.json"
    if source.is_file():
        texts = {row["id"]: row["medical_case"] for row in json.loads(source.read_text(encoding="utf-8"))}
        pairs = []
        annotated = load_annotation()
        if med_dialog_limit:
            annotated = sorted(annotated, key=lambda i: not (set(i["allergies"]) - {"none"}))[:med_dialog_limit]
        for index, item in enumerate(annotated):
            if item["id"] not in texts:
                raise ValueError(f"annotated id {item['id']} is not in {source}")
            profile = Profile()
            update_from_turn(profile, texts[item["id"]], 1, engine=engine)
            predicted = profile_values(profile, "allergies")
            expected = {"none" if v == "none" else canonical(v) for v in item["allergies"]}
            pairs.append((predicted, expected))
            if predicted != expected:
                errors.append({"set": "med-dialog", "id": item["id"], "field": "allergies",
                               "predicted": sorted(predicted), "expected": sorted(expected)})
            if (index + 1) % 50 == 0:
                yield ev.Progress(done=index + 1, total=len(texts), message="Med-dialog allergy fields")
        stated = [(p - {"none"}, e - {"none"}) for p, e in pairs]
        result["med_dialog"] = {"dialogues": len(pairs), "allergies": score(pairs),
                                "allergens_only": score(stated)}
    else:
        yield ev.Warning(message=f"Med-dialog data not found at {source}: only the synthetic set was scored")
        result["med_dialog"] = None
    result["extractor"] = "model + rules" if engine is not None else "rules"
    result["errors"] = errors
    result["seconds"] = round(time.perf_counter() - start, 2)
    rows = [["synthetic", f, s["precision"], s["recall"], s["f1"]] for f, s in result["synthetic"]["fields"].items()]
    if result["med_dialog"]:
        rows.append(["med-dialog", "allergies", *(result["med_dialog"]["allergies"][k] for k in ("precision", "recall", "f1"))])
    yield ev.Table(columns=["set", "field", "precision", "recall", "F1"], rows=rows, title="Profile extraction")
    lowest = min(r[4] for r in rows)
    result["passed"] = lowest >= TARGET_F1
    yield ev.Done(summary=f"profile extraction: lowest F1 {lowest:.3f} (target {TARGET_F1})", result=result)
