"""Training really learns (a reduced version of bench/bench_training_learning.py).

From random weights, a tiny Qwen3-VL learns to caption synthetic shapes exactly; LoRA then teaches
a new caption style; DPO makes the new style's true caption beat the rejected one. Smaller data
and fewer colours/shapes than the bench, same thresholds.
"""

from __future__ import annotations

import pytest

from localqwen.training.shapes_proof import (
    ProofSizes,
    dpo_preference,
    teach_style_with_lora,
    train_from_scratch,
)

SIZES = ProofSizes(n_train=400, n_eval=40, epochs=3, learning_rate=2e-3, style_train=160, style_epochs=3,
                   dpo_train=120, dpo_epochs=2, colors=["red", "blue"], shapes=["square", "triangle"],
                   backgrounds=["white", "black"], seed=1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    return root, train_from_scratch(root, SIZES)


@pytest.mark.slow
def test_full_training_from_scratch_captions_held_out_images_exactly(trained):
    _root, result = trained
    assert result["exact_match"] >= 0.95, result


@pytest.mark.slow
def test_lora_teaches_a_new_caption_style(trained):
    root, result = trained
    style = teach_style_with_lora(root, result["model"], SIZES)
    assert style["exact_match_before"] == 0.0  # the base model only knows the old style
    assert style["exact_match"] >= 0.90, style


@pytest.mark.slow
def test_dpo_makes_the_chosen_caption_more_likely(trained):
    root, result = trained
    dpo = dpo_preference(root, result["model"], SIZES)
    assert dpo["preference_accuracy"] >= 0.90, dpo
    assert dpo["preference_accuracy"] > dpo["preference_before"]
