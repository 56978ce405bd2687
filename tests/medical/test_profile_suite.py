"""evaluate --suite profile: the synthetic dialogues are deterministic and the extractor reaches
F1 >= 0.9 on them and on our annotation of Med-dialog's allergy fields."""

from __future__ import annotations

import json

import pytest
from localqwen_medical.profile_dialogues import generate_dialogues
from localqwen_medical.profile_eval import ANNOTATION_FILE, run_profile_suite, score
from localqwen_medical.router_suite import default_data_dir

from localqwen.vocabulary import events as ev


def test_generator_is_deterministic_and_mixes_languages_and_traps():
    first, again = generate_dialogues(40, seed=3), generate_dialogues(40, seed=3)
    assert [d.turns for d in first] == [d.turns for d in again]
    assert [d.turns for d in first] != [d.turns for d in generate_dialogues(40, seed=4)]
    assert {d.language for d in first} == {"en", "zh"}
    text = " ".join(t for d in generate_dialogues(200) for t in d.turns)
    for trap in ("not allergic", "不过敏", "My mother", "我妈妈", "stopped taking", "停了", "Can I take", "能不能吃"):
        assert trap in text
    with pytest.raises(ValueError, match="at least 1"):
        generate_dialogues(0)


def test_score_counts_pairs():
    assert score([({"a", "b"}, {"a"}), (set(), {"c"})]) == {"precision": 0.5, "recall": 0.5, "f1": 0.5,
                                                            "tp": 1, "fp": 1, "fn": 1}


def test_annotation_holds_ids_and_labels_only():
    data = json.loads(ANNOTATION_FILE.read_text(encoding="utf-8"))
    assert "how" in data and len(data["items"]) == 100
    assert all(set(item) <= {"id", "allergies", "note"} for item in data["items"])


def test_suite_reaches_the_target_on_both_sets():
    if not (default_data_dir() / "huatuogpt_eval" / "Med-dialog_100.json").is_file():
        pytest.skip("../shared/data/huatuogpt_eval/Med-dialog_100.json is not on this machine")
    events = list(run_profile_suite(dialogues=200))
    done = events[-1]
    assert isinstance(done, ev.Done) and any(isinstance(e, ev.Table) for e in events)
    result = done.result
    for field, scores in result["synthetic"]["fields"].items():
        assert scores["f1"] >= 0.9, field
    assert result["med_dialog"]["allergies"]["f1"] >= 0.9
    assert result["med_dialog"]["allergens_only"]["tp"] >= 7  # the real allergens, not only the "none" answers
    assert result["passed"] is True


def test_suite_without_the_data_scores_the_synthetic_set_and_warns(tmp_path):
    events = list(run_profile_suite(data_dir=tmp_path, dialogues=20))
    assert any(isinstance(e, ev.Warning) and "Med-dialog" in e.message for e in events)
    assert events[-1].result["med_dialog"] is None
