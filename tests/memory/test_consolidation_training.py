"""Consolidation end to end on the tiny test Qwen3: a short training that really learns, token
recall with its fallback, hot-swap + rollback in a running engine, forgotten memories dropped."""

from __future__ import annotations

import json

import pytest
from localqwen_memory.consolidation.paraphrase import augment
from localqwen_memory.consolidation.synthetic import general_rows, synthetic_facts
from localqwen_memory.consolidation.train import ConsolidationSettings, MemoryItem, consolidate

pytestmark = pytest.mark.slow  # ~1-2 minutes on a busy 2-core CPU

FACTS = synthetic_facts(8, seed=3)


def _vectors(count: int, dim: int = 24):
    import torch

    generator = torch.Generator().manual_seed(5)
    return torch.nn.functional.normalize(torch.randn(count, dim, generator=generator), dim=-1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_qwen3_path):
    out = tmp_path_factory.mktemp("memory_adapter") / "adapter-1"
    vectors = _vectors(len(FACTS))
    items = [MemoryItem(f.memory_id, f.text, v) for f, v in zip(FACTS, vectors, strict=True)]
    seen = []
    result = consolidate(tiny_qwen3_path, items, out, general=general_rows(200),
                         settings=ConsolidationSettings(recall_epochs=6, mix_epochs=12,
                                                        batch_size=16, threads=1),
                         on_progress=seen.append)
    return result, seen


def _held_out(fact):
    return augment(fact.memory_id, fact.text).held_out_questions


def test_training_learns_to_recall_held_out_questions(trained, tiny_qwen3_path):
    from localqwen_memory.consolidation.consolidation_eval import load_consolidated, score_recall
    from localqwen_memory.consolidation.token_recall import TokenRecaller

    result, seen = trained
    assert {p.phase for p in seen} == {"recall", "mix"}
    assert seen[-1].step == seen[-1].total and seen[-1].eta_s == 0
    assert seen[-1].loss < seen[0].loss
    meta = json.loads((result.output / "consolidation.json").read_text())
    assert meta["bank_ids"] == [f.memory_id for f in FACTS]
    model, tokenizer, head = load_consolidated(tiny_qwen3_path, result.output)
    scores = score_recall(TokenRecaller(model, tokenizer, head), FACTS)
    # Chance is 1 in 8; the held-out question frames were never trained on.
    assert scores.asked >= 0.9
    assert scores.picked >= 0.6, scores


def test_hot_swap_rollback_and_fallback_in_a_running_engine(trained, tiny_qwen3_path, tmp_path):
    import torch
    from localqwen_memory.consolidation.swap import SwapError, recaller, rollback, swap_in

    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    result, _ = trained
    engine = TransformersEngine(tiny_qwen3_path)
    try:
        assert recaller(engine) is None
        before = engine.chat([{"role": "user", "content": "What is 2 plus 3?"}]).text
        swap_in(engine, result.output)
        state = engine.memory_slot
        assert state.active.folder == result.output and state.previous is None
        fact = FACTS[0]
        question = [{"role": "user", "content": _held_out(fact)[0]}]
        outcome = recaller(engine).recall(question)
        assert outcome.path in ("token", "text", "none")
        # A forgotten memory never comes back through token recall: text recall answers instead.
        others = {f.memory_id for f in FACTS[1:]}
        texts = {f.memory_id: f.text for f in FACTS}

        def text_recall(query: str) -> list[str]:
            return [t for t in texts.values() if fact.person in query and fact.person in t]

        fallback = recaller(engine).recall(question, allowed=set(), text_recall=text_recall)
        assert fallback.path == "text" and fallback.hits == [fact.text]
        assert recaller(engine).recall(question, allowed=set()).path == "none"
        kept = recaller(engine).recall(question, allowed=others)
        assert kept.memory_id != fact.memory_id
        # A second adapter goes in beside the first; rollback returns to the first, same engine.
        second = tmp_path / "adapter-2"
        second.mkdir()
        for item in result.output.iterdir():
            (second / item.name).write_bytes(item.read_bytes())
        swap_in(engine, second)
        assert engine.memory_slot.active.folder == second and engine.memory_slot.previous.folder == result.output
        rollback(engine)
        assert engine.memory_slot.active.folder == result.output
        assert engine.chat([{"role": "user", "content": "What is 2 plus 3?"}]).text is not None
        assert isinstance(before, str)
        with pytest.raises(SwapError, match="not a memory adapter"):
            swap_in(engine, tmp_path)
        assert torch.is_tensor(engine.memory_slot.active.head.bank.vectors)
    finally:
        engine.close()


def test_second_consolidation_drops_forgotten_memories(trained, tiny_qwen3_path, tmp_path):
    result, _ = trained
    forgotten = FACTS[2].memory_id
    keep = {f.memory_id for f in FACTS} - {forgotten}
    new = synthetic_facts(2, batch=1, seed=3)
    items = [MemoryItem(f.memory_id, f.text, v) for f, v in zip(new, _vectors(2), strict=True)]
    second = consolidate(tiny_qwen3_path, items, tmp_path / "adapter-2", general=general_rows(50),
                         previous=result.output, keep_old=keep,
                         settings=ConsolidationSettings(recall_epochs=0.5, mix_epochs=1, batch_size=16, threads=1))
    assert forgotten not in second.bank_ids
    assert set(second.bank_ids) == keep | {f.memory_id for f in new}
    listing = json.loads((second.output / "memory_bank.json").read_text())
    assert forgotten not in listing["ids"] and FACTS[2].text not in listing["texts"]
    with pytest.raises(ValueError, match="nothing to consolidate"):
        consolidate(tiny_qwen3_path, [], tmp_path / "x", general=general_rows(5))


def test_consolidate_action_runs_as_a_job_without_forgotten_memories(tmp_path, tiny_qwen3_path):
    from localqwen_memory.store import open_store

    from localqwen.app import Workbench
    from localqwen.vocabulary import events

    bench = Workbench.create()
    bench.paths.config_dir.mkdir(parents=True, exist_ok=True)
    bench.paths.config_file.write_text(f'[plugins.memory]\nmodel = "{tiny_qwen3_path}"\n', encoding="utf-8")
    bench = Workbench.create()
    ctx = bench.context("memory")
    store = open_store(ctx)
    kept = [store.add(f.text)[0] for f in FACTS[:2]]
    gone = store.add(FACTS[2].text)[0]
    store.forget(gone.id)
    engine = ctx.engine()  # a running engine of the same model: the job swaps the adapter into it
    job = bench.start_action("memory", "consolidate", {"max_minutes": 2})
    assert job.wait(timeout=600)
    done = [e for e in job.events if isinstance(e, events.Done)][-1]
    assert done.status == "ok", [getattr(e, "message", e) for e in job.events]
    assert done.result["consolidated"] == 2 and done.result["swapped"] is True
    assert any(isinstance(e, events.Progress) for e in job.events)
    assert {m.consolidation for m in (store.get(k.id) for k in kept)} == {"consolidated"}
    assert store.get(gone.id).consolidation == "excluded"
    assert set(engine.memory_slot.active.head.bank.ids) == {str(k.id) for k in kept}
    # the bank is keyed by MiniLM's vectors (KEY_EMBEDDER), not by the store's search embedder (bge)
    import numpy as np
    from localqwen_memory.consolidation.memory_head import KEY_EMBEDDER

    from localqwen.retrieval.embeddings import get_embedder

    assert store.embedder_name != KEY_EMBEDDER
    bank = engine.memory_slot.active.head.bank
    minilm = store.embeddings([kept[0].id], embedder=get_embedder(KEY_EMBEDDER, manager=ctx.device))[0]
    assert np.allclose(bank.vector(str(kept[0].id)).numpy(), minilm, atol=1e-5)
    again = list(bench.run("memory", "consolidate", {}))
    assert again[-1].result == {"consolidated": 0}
    # The chat now asks the swapped-in adapter first (token recall) and says what happened.
    chats = bench.conversations
    session = chats.new_session("memory")
    turn = list(chats.send("memory", session, _held_out(FACTS[0])[0]))
    assert turn[-1].status == "ok", turn
    recall = next(e for e in turn if isinstance(e, events.Step) and e.step == "recall")
    if recall.title == "recall: token":
        picked = int(recall.detail.split("token recall picked #", 1)[1].split(" ", 1)[0])
        assert picked in {k.id for k in kept}  # never the forgotten one
    else:
        assert recall.title == "recall: text" and "token recall not used: " in recall.detail
    assert bench.host.get("memory")._background().wait(300)


def test_evaluate_suite_consolidation_runs_the_proof_from_the_cli():
    """`localqwen run memory evaluate --suite consolidation`: the proof's lines stream as it goes and
    the Done carries the report with each goal's verdict. The proof model is pre-built here with
    10 pretraining steps instead of 300 (the suite reuses a built one), so this checks the wiring,
    not the numbers (the bench has those)."""
    from localqwen_memory.consolidation.consolidation_eval import build_proof_model
    from typer.testing import CliRunner

    from localqwen.app import Workbench
    from localqwen.cli.main import app

    outputs = Workbench.create().context("memory").outputs_dir
    build_proof_model(outputs / "consolidation-proof" / "base", pretrain_steps=10, log=lambda line: None)
    result = CliRunner().invoke(app, ["run", "memory", "evaluate", "--suite", "consolidation", "--facts", "2",
                                      "--json"])
    assert result.exit_code == 0, result.output[-2000:]
    # stdout alone: stderr carries the model loader's progress bars, which end without a newline
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    logs = [e["message"] for e in events if e["kind"] == "log"]
    assert any(line.startswith("batch 1: ") for line in logs) and any("after batch 2" in line for line in logs), logs
    table = next(e for e in events if e["kind"] == "table")
    assert table["title"] == "Consolidation proof" and {row[1] for row in table["rows"]} <= {"met", "missed"}
    done = events[-1]
    assert done["kind"] == "done" and done["status"] == "ok"
    report = done["result"]
    assert report["facts_per_batch"] == 2 and set(report["ok"]) >= {"picked_>=95%", "exact_>=90%",
                                                                     "batch_1_kept_>=85%", "swapped_without_restart"}
    assert report["swap"]["same_engine"] is True
