"""Caption metrics against values worked out by hand, and on real COCO references."""

from __future__ import annotations

import json

import pytest
from captioner_support import COCO_MINI, needs_coco
from localqwen_captioner.metrics import score_captions, tokenize


def test_tokenize_follows_coco_ptb_rules():
    assert tokenize("A dog's ball, isn't it? Two people -- on a SOFA...") == [
        "a", "dog", "'s", "ball", "is", "n't", "it", "two", "people", "on", "a", "sofa"]
    assert tokenize("“Hi”, said the (red) bus.") == ["hi", "said", "the", "red", "bus"]
    assert tokenize("一只猫在沙发上") == list("一只猫在沙发上")
    assert tokenize("") == []


def test_hand_computed_two_image_corpus():
    # Image a: 6-token candidate, reference shares "a b c d": n-gram precisions 4/6, 3/5, 2/4, 1/3.
    # Image b: exact match, 5 tokens: 5/5, 4/4, 3/3, 2/2. Corpus BLEU-4 = (9/11 * 7/9 * 5/7 * 3/5)^(1/4)
    #   = (3/11)^(1/4), lengths equal so no brevity penalty.
    # ROUGE-L (beta 1.2): a has LCS 4 of 6 both ways -> 2/3; b -> 1; mean 5/6.
    # CIDEr-D: every n-gram occurs in one image only, so all IDF weights are log 2 and cancel:
    #   a -> 10 * mean(4/6, 3/5, 2/4, 1/3) = 5.25; b -> 10; mean 7.625.
    refs = {"a": ["a b c d x y"], "b": ["zz yy xx ww vv"]}
    scores = score_captions(refs, {"a": "a b c d e f", "b": "zz yy xx ww vv"})
    assert scores.bleu4 == pytest.approx((3 / 11) ** 0.25, abs=1e-6)
    assert scores.rouge_l == pytest.approx(5 / 6)
    assert scores.cider == pytest.approx(7.625)
    assert scores.images == 2


def test_perfect_and_empty_captions():
    refs = {"a": ["one two three four"], "b": ["five six seven eight"]}
    perfect = score_captions(refs, {"a": "One two three four.", "b": "five six, seven eight"})
    assert perfect.bleu4 == pytest.approx(1.0, abs=1e-6) and perfect.rouge_l == 1.0 and perfect.cider == 10.0
    half = score_captions(refs, {"a": "", "b": "five six seven eight"})
    assert half.cider == pytest.approx(5.0) and half.rouge_l == pytest.approx(0.5)


def test_single_image_has_no_cider_and_missing_reference_is_an_error():
    single = score_captions({"a": ["a b c d x y"]}, {"a": "a b c d e f"})
    assert single.cider is None and single.bleu4 == pytest.approx((1 / 15) ** 0.25, abs=1e-6)
    with pytest.raises(ValueError, match="no reference"):
        score_captions({"a": ["x"]}, {"b": "x"})
    with pytest.raises(ValueError, match="nothing to score"):
        score_captions({"a": ["x"]}, {})


@needs_coco
def test_real_coco_references_rank_a_human_caption_above_a_wrong_one():
    data = json.loads((COCO_MINI / "annotations" / "captions_val2017.json").read_text())
    refs: dict[str, list[str]] = {}
    for note in data["annotations"]:
        refs.setdefault(str(note["image_id"]), []).append(note["caption"])
    # Leave-one-out: each image's first human caption scored against the other four.
    held_out = {key: captions[0] for key, captions in refs.items()}
    rest = {key: captions[1:] for key, captions in refs.items()}
    human = score_captions(rest, held_out)
    # The same human captions given to the wrong images (shifted by one).
    keys = list(held_out)
    shifted = {key: held_out[keys[(i + 1) % len(keys)]] for i, key in enumerate(keys)}
    wrong = score_captions(rest, shifted)
    assert human.images == 79
    # Published human-agreement scores on COCO are around BLEU-4 0.2, CIDEr 0.85.
    assert 0.1 < human.bleu4 < 0.35 and 0.6 < human.cider < 1.2 and human.rouge_l > 0.4
    assert wrong.cider < 0.15 < human.cider and wrong.bleu4 < human.bleu4 and wrong.rouge_l < human.rouge_l


def test_trainer_metric_hook_pairs_rows_by_position():
    from localqwen_captioner.metrics import caption_metric

    values = caption_metric(["a b c d e f", "zz yy xx ww vv"], ["a b c d x y", "zz yy xx ww vv"])
    assert values["bleu4"] == pytest.approx((3 / 11) ** 0.25, abs=1e-6) and values["cider"] == pytest.approx(7.625)
    assert "cider" not in caption_metric(["a b"], ["a b"])
    with pytest.raises(ValueError, match="2 predictions for 1 references"):
        caption_metric(["a", "b"], ["a"])
