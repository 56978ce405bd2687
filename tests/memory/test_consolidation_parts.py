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


def test_slots_survive_merge_and_saving_and_training_and_decoding_inject_the_same(tmp_path):
    import torch
    from localqwen_memory.consolidation.memory_head import injection, load_head, save_head

    torch.manual_seed(0)
    head = build_head(8, 4, pooled=True)
    old = MemoryBank(["a", "b"], torch.randn(2, 4), torch.randn(2, 8))
    merged = old.merged(MemoryBank(["c"], torch.randn(1, 4)))  # a new memory: its slot starts at zero
    assert merged.ids == ["a", "b", "c"]
    assert torch.equal(merged.slots[:2], old.slots) and float(merged.slots[2].abs().sum()) == 0.0
    with pytest.raises(ValueError, match="1 slots for 2 memories"):
        MemoryBank(["a", "b"], torch.zeros(2, 4), torch.zeros(1, 8))
    save_head(tmp_path, head, merged, temperature=0.05, threshold=0.5, texts={"a": "A."})
    loaded = load_head(tmp_path)
    assert loaded.head.pooled and torch.equal(loaded.bank.slots, merged.slots)
    indices = torch.tensor([0, 2])
    with torch.no_grad():
        expected = head.embed(merged.vectors[indices]) + merged.slots[indices]
        assert torch.allclose(injection(loaded.head, loaded.bank, indices), expected)
        # Without slots the injection is the projection alone (adapters written before slots).
        assert torch.allclose(injection(head, MemoryBank(["a"], merged.vectors[:1]), torch.tensor([0])),
                              head.embed(merged.vectors[:1]))


def test_pooled_query_reads_attention_pools_of_the_prompt_tokens():
    import torch
    from localqwen_memory.consolidation.memory_head import POOL_HEADS, query_features

    states = torch.arange(2 * 3 * 2, dtype=torch.float32).reshape(2, 3, 2)
    tokens = -states
    mask = torch.tensor([[1, 1, 0], [0, 1, 1]])
    positions = torch.tensor([1, 2])
    head = build_head(2, 4, pooled=True)
    with torch.no_grad():  # equal pooling scores: every pool is the plain mean of the masked positions
        head.pool.weight.zero_()
        head.pool.bias.zero_()
        features = query_features(head, states, positions, mask, tokens)
        assert features.tolist() == [[-1.0, -2.0] * POOL_HEADS, [-9.0, -10.0] * POOL_HEADS]
        head.pool.weight[0] = torch.tensor([0.0, 100.0])  # pool 0: all weight on the largest masked token
        assert query_features(head, states, positions, mask, tokens)[:, :2].tolist() == [[0.0, -1.0], [-8.0, -9.0]]
    assert query_features(build_head(2, 4), states, positions, mask).tolist() == [[2.0, 3.0], [10.0, 11.0]]


def test_general_rows_write_about_people_no_fact_batch_uses():
    from localqwen_memory.consolidation.synthetic import general_rows, synthetic_facts

    batches = [f.person for b in range(3) for f in synthetic_facts(300, batch=b)]
    assert len(set(batches)) == 900
    in_context = [(q, a) for q, a in general_rows(400) if a.endswith(".") and "'s " in a]
    assert len(in_context) > 50
    assert not any(person in q or person in a for q, a in in_context for person in set(batches))


def test_memory_full_row_learns_the_memory_text_and_the_end_of_the_turn(tiny_qwen3_path):
    from localqwen_memory.consolidation.rows import IGNORE, RowBuilder
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen3_path)
    ids = prepare_model_and_tokenizer(AutoModelForCausalLM.from_pretrained(tiny_qwen3_path), tokenizer)
    row = RowBuilder(tokenizer, ids).memory_full("Any idea?", "Ana Berg's pet is a ferret.", 3)
    assert row.input_ids[row.pad_position] == ids.memory_pad and row.labels[row.pad_position] == IGNORE
    assert row.labels[row.recall_position] == ids.recall
    learnt = [t for t in row.labels[row.pad_position + 1:]]
    assert IGNORE not in learnt
    assert tokenizer.decode(learnt) == "Ana Berg's pet is a ferret.\n<|im_end|>"


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
