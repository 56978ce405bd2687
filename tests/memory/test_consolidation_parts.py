"""Consolidation parts without training: special tokens, head scoring, paraphrases, schedule."""

from __future__ import annotations

import pytest
from localqwen_memory.consolidation.memory_head import MemoryBank, build_head, choose
from localqwen_memory.consolidation.paraphrase import MIN_WORDINGS, augment, split_fact
from localqwen_memory.consolidation.schedule import is_due, parse_every
from localqwen_memory.consolidation.special_tokens import (
    MEMORY_PAD,
    RECALL,
    memory_token_ids,
    prepare_model_and_tokenizer,
)


def test_special_tokens_added_once_and_fit_the_embeddings(tiny_qwen3_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen3_path)
    with pytest.raises(ValueError, match="not prepared for token recall"):
        memory_token_ids(tokenizer)
    model = AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)
    ids = prepare_model_and_tokenizer(model, tokenizer)
    assert prepare_model_and_tokenizer(model, tokenizer) == ids  # idempotent
    assert tokenizer.convert_ids_to_tokens(ids.ids) == [RECALL, MEMORY_PAD]
    assert tokenizer.encode(f"hi{RECALL}{MEMORY_PAD}", add_special_tokens=False)[-2:] == ids.ids
    assert tokenizer.decode(ids.ids, skip_special_tokens=True) == ""
    rows = model.get_input_embeddings().weight
    assert rows.shape[0] >= len(tokenizer)
    first = rows[ids.ids].clone()
    # Loading again sets the same rows (the adapter was trained against them).
    other = AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)
    prepare_model_and_tokenizer(other, AutoTokenizer.from_pretrained(tiny_qwen3_path))
    assert torch.equal(other.get_input_embeddings().weight[ids.ids], first)
    assert float(first.detach().norm(dim=-1).min()) > 0


def test_head_picks_top1_respects_threshold_and_forgotten_memories():
    import torch

    torch.manual_seed(0)
    head = build_head(8, 4)
    bank = torch.nn.functional.normalize(torch.randn(3, 4), dim=-1)
    hidden = torch.randn(5, 8)
    with torch.no_grad():
        cosines = head.project(hidden) @ bank.T
    ids = ["a", "b", "c"]
    picks = choose(head, hidden, bank, ids, threshold=1e-6)
    assert [p.memory_id for p in picks] == [ids[i] for i in cosines.argmax(-1).tolist()]
    assert all(p.memory_id is None for p in choose(head, hidden, bank, ids, threshold=0.999999, temperature=10.0))
    for p in choose(head, hidden, bank, ids, threshold=1e-6, allowed={"c"}):
        assert p.memory_id == "c"
    with pytest.raises(ValueError, match="2 memory ids for 3 vectors"):
        choose(head, hidden, bank, ids[:2])


def test_bank_merge_keeps_new_vectors():
    import torch

    old = MemoryBank(["a", "b"], torch.zeros(2, 3))
    merged = old.merged(MemoryBank(["b", "c"], torch.ones(2, 3)))
    assert merged.ids == ["a", "b", "c"]
    assert float(merged.vector("b").sum()) == 3.0
    with pytest.raises(ValueError, match="unique"):
        MemoryBank(["a", "a"], torch.zeros(2, 3))


def test_paraphrases_give_enough_wordings_and_keep_held_out_questions_apart():
    for text in ("Ana Berg's favourite colour is teal.", "The user lives in Porto", "Dentist on Friday at nine"):
        augmented = augment("m1", text)
        assert len(augmented.statements) >= MIN_WORDINGS
        assert augmented.held_out_questions
        assert not {q.lower() for q in augmented.held_out_questions} & {p.lower() for p in augmented.training_prompts}
    assert split_fact("The user lives in Porto").verb == "lives in"
    assert split_fact("Dentist on Friday") is None
    with pytest.raises(ValueError, match="no text"):
        augment("m2", "  ")


def test_schedule(tmp_path):
    assert parse_every("3d") == 3 * 86400 and parse_every("") is None and parse_every("off") is None
    with pytest.raises(ValueError, match="30m, 12h, 3d or 1w"):
        parse_every("every tuesday")
    state = tmp_path / "state.json"
    assert is_due("1h", state)  # never run
    state.write_text('{"finished_at": 1000}')
    assert not is_due("1h", state, now=1000 + 3599)
    assert is_due("1h", state, now=1000 + 10 * 86400)  # long overdue (app was closed): due once now
    assert not is_due("", state)


def test_start_if_due_starts_the_job_only_when_due(tmp_path):
    import json
    import time

    from localqwen_memory.consolidation.job import start_if_due, state_path

    from localqwen.app import Workbench

    bench = Workbench.create()
    bench.paths.config_dir.mkdir(parents=True, exist_ok=True)
    assert start_if_due(bench) is None  # no schedule: on demand only
    bench.paths.config_file.write_text('[plugins.memory]\nconsolidate_every = "1h"\n', encoding="utf-8")
    bench = Workbench.create()
    state = state_path(bench.context("memory"), "default")
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"finished_at": time.time()}))
    assert start_if_due(bench) is None  # ran a moment ago
    state.write_text(json.dumps({"finished_at": time.time() - 3 * 86400}))  # overdue while the app was closed
    job = start_if_due(bench)
    assert job is not None and job.wait(timeout=60)
    assert job.events[-1].result == {"consolidated": 0}  # nothing pending in this empty store
