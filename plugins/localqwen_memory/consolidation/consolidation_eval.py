"""The consolidation proof (``evaluate --suite consolidation``) on a tiny Qwen3 built from a config.

1. Build the tiny model (its tokenizer trained on the facts' vocabulary) and give it general
   skills first (full fine-tune on general rows), so "general loss" means something.
2. Consolidate batch 1 (N synthetic facts, each in >= 5 wordings); ask every held-out
   paraphrased question: does the model ask to recall, does the head pick the right memory,
   is the decoded text exactly the memory's text?
3. Consolidate batch 2 from that adapter; ask batch 1's held-out questions again (retention).
4. Held-out general rows: loss before and after (relative rise).
5. Hot-swap the adapter into a running transformers engine and recall through it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localqwen_memory.consolidation.paraphrase import augment
from localqwen_memory.consolidation.synthetic import corpus_lines, general_rows, synthetic_facts
from localqwen_memory.consolidation.train import ConsolidationSettings, MemoryItem, consolidate

# The proof's model: larger than the test model (hidden 64, 2 layers) to have room for the facts.
PROOF_MODEL = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 32}


@dataclass
class RecallScores:
    questions: int
    asked: float
    picked: float
    exact: float


def build_proof_model(folder: Path, *, pretrain_steps: int = 300, seed: int = 0,
                      log: Callable[[str], None] = print) -> Path:
    """The tiny Qwen3 with general skills (cached: reused when ``folder`` already holds it)."""
    import torch

    from localqwen.testing.tiny_models import build_tiny_qwen3
    from localqwen_memory.consolidation.rows import RowBuilder, collate
    from localqwen_memory.consolidation.special_tokens import MemoryTokenIds
    from localqwen_memory.consolidation.train import load_base

    if (folder / "model.safetensors").is_file() and (folder / "pretrained.txt").is_file():
        return folder
    torch.set_num_threads(1)  # on a shared 2-core CPU one thread is several times faster than two
    build_tiny_qwen3(folder, corpus=corpus_lines(), seed=seed, **PROOF_MODEL)
    model, tokenizer = load_base(folder)
    builder = RowBuilder(tokenizer, MemoryTokenIds(-1, -1))  # plain rows only: no memory tokens yet
    rows = [builder.plain(q, a) for q, a in general_rows(2000, seed=seed)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = random.Random(seed)
    model.train()
    started = time.monotonic()
    for step in range(pretrain_steps):
        batch = collate(rng.sample(rows, 32), tokenizer.pad_token_id)
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
        if step % 20 == 0:
            log(f"pretrain {step}/{pretrain_steps} loss {float(out.loss.detach()):.3f}")
    model.save_pretrained(folder)
    (folder / "pretrained.txt").write_text(f"{pretrain_steps} steps in {time.monotonic() - started:.0f} s\n")
    return folder


def load_consolidated(base: Path, adapter: Path) -> tuple[Any, Any, Any]:
    from peft import PeftModel
    from transformers import AutoTokenizer

    from localqwen_memory.consolidation.memory_head import load_head
    from localqwen_memory.consolidation.special_tokens import prepare_model_and_tokenizer
    from localqwen_memory.consolidation.train import load_base

    model, _ = load_base(base)
    tokenizer = AutoTokenizer.from_pretrained(adapter)
    prepare_model_and_tokenizer(model, tokenizer)
    return PeftModel.from_pretrained(model, adapter).eval(), tokenizer, load_head(adapter)


def score_recall(recaller: Any, facts: list[Any], *, batch: int = 64) -> RecallScores:
    """Held-out paraphrased questions through token recall (probe + decode, batched)."""
    prompts, truth = [], []
    for fact in facts:
        for question in augment(fact.memory_id, fact.text).held_out_questions:
            prompts.append(recaller.prompt_ids([{"role": "user", "content": question}]))
            truth.append(fact)
    asked = picked = exact = 0
    for start in range(0, len(prompts), batch):
        chunk, facts_here = prompts[start:start + batch], truth[start:start + batch]
        probes = recaller.probe(chunk)
        chosen = [p.choice.memory_id or recaller.head.bank.ids[p.choice.index] for p in probes]
        texts = recaller.decode(chunk, chosen)
        for probe, _memory_id, text, fact in zip(probes, chosen, texts, facts_here, strict=True):
            asked += probe.asked
            good = probe.asked and probe.choice.memory_id == fact.memory_id
            picked += good
            exact += good and text == fact.text
    n = len(prompts)
    return RecallScores(n, asked / n, picked / n, exact / n)


def general_loss(model: Any, tokenizer: Any, rows: list[tuple[str, str]]) -> float:
    """Mean token loss on plain (question, answer) rows."""
    import torch

    from localqwen_memory.consolidation.rows import RowBuilder, collate
    from localqwen_memory.consolidation.special_tokens import MemoryTokenIds

    builder = RowBuilder(tokenizer, MemoryTokenIds(-1, -1))
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(rows), 64):
            batch = collate([builder.plain(q, a) for q, a in rows[start:start + 64]], tokenizer.pad_token_id)
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
            labels = batch["labels"][:, 1:]
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                                                     ignore_index=-100, reduction="sum")
            total += float(loss)
            count += int((labels != -100).sum())
    return total / max(count, 1)


def run_proof(work: Path, *, facts: int = 300, settings: ConsolidationSettings | None = None,
              pretrain_steps: int = 300, second_batch: bool = True, swap: bool = True,
              embed: Callable[[list[str]], Any] | None = None, embedder: str | None = None,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    """The whole proof; returns the numbers (see the module docstring). The facts' vectors come from
    ``embed``, else from ``embedder`` (a model name), else from the embedder that keys consolidated
    memories (``memory_head.KEY_EMBEDDER``), as the chat's consolidation does."""
    from localqwen_memory.consolidation.token_recall import TokenRecaller
    from localqwen_memory.consolidation.train import load_base

    work.mkdir(parents=True, exist_ok=True)
    base = build_proof_model(work / "base", pretrain_steps=pretrain_steps, log=log)
    if embed is None:
        from localqwen.retrieval.embeddings import get_embedder
        from localqwen_memory.consolidation.memory_head import KEY_EMBEDDER

        embedder = embedder or KEY_EMBEDDER
        embed = get_embedder(embedder, threads=1).encode
    held_general = general_rows(200, seed=12345)
    train_general = general_rows(1000, seed=7)
    settings = settings or ConsolidationSettings(threads=1)
    report: dict[str, Any] = {"model": PROOF_MODEL, "facts_per_batch": facts, "settings": vars(settings).copy(),
                              "embedder": embedder or "given by the caller"}

    def progress(p: Any) -> None:
        if p.step == p.total or p.step % 25 == 0:
            log(f"{p.phase} {p.step}/{p.total} loss {p.loss:.3f} ({p.elapsed_s:.0f} s, eta {p.eta_s or 0:.0f} s)")

    def items(batch_facts: list[Any]) -> list[MemoryItem]:
        vectors = embed([f.text for f in batch_facts])
        return [MemoryItem(f.memory_id, f.text, v) for f, v in zip(batch_facts, vectors, strict=True)]

    base_model, base_tokenizer = load_base(base)
    loss_before = general_loss(base_model, base_tokenizer, held_general)
    del base_model
    first = synthetic_facts(facts, batch=0)
    result = consolidate(base, items(first), work / "adapter-1", general=train_general, settings=settings,
                         on_progress=progress)
    report["consolidation_1_s"] = result.seconds
    report["steps_1"] = result.steps
    model, tokenizer, head = load_consolidated(base, work / "adapter-1")
    scores = score_recall(TokenRecaller(model, tokenizer, head), first)
    report["batch_1"] = vars(scores)
    loss_after = general_loss(model, tokenizer, held_general)
    report["general_loss"] = {"before": round(loss_before, 4), "after": round(loss_after, 4),
                              "rise": round(loss_after / loss_before - 1, 4)}
    log(f"batch 1: {scores}; general loss {loss_before:.3f} -> {loss_after:.3f}")
    if second_batch:
        second = synthetic_facts(facts, batch=1)
        result2 = consolidate(base, items(second), work / "adapter-2", general=train_general, settings=settings,
                              previous=work / "adapter-1", on_progress=progress)
        report["consolidation_2_s"] = result2.seconds
        model, tokenizer, head = load_consolidated(base, work / "adapter-2")
        recaller = TokenRecaller(model, tokenizer, head)
        report["batch_2"] = vars(score_recall(recaller, second))
        report["batch_1_after_batch_2"] = vars(score_recall(recaller, first))
        log(f"after batch 2: {report['batch_2']}, batch 1 kept: {report['batch_1_after_batch_2']}")
    if swap:
        report["swap"] = _swap_check(base, work, first[0])
    report["ok"] = _verdict(report)
    return report


def _swap_check(base: Path, work: Path, fact: Any) -> dict[str, Any]:
    """Load a running engine on the base, swap adapter 1 (then 2, then roll back) in place."""
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen_memory.consolidation.swap import recaller, rollback, swap_in

    engine = TransformersEngine(base)
    engine_id = id(engine)
    started = time.monotonic()
    swap_in(engine, work / "adapter-1")
    first_swap = time.monotonic() - started
    question = augment(fact.memory_id, fact.text).held_out_questions[0]
    outcome = recaller(engine).recall([{"role": "user", "content": question}])
    checks = {"swap_s": round(first_swap, 3), "path": outcome.path, "memory_id": outcome.memory_id,
              "right_memory": outcome.memory_id == fact.memory_id, "text": outcome.text}
    if (work / "adapter-2").is_dir():
        swap_in(engine, work / "adapter-2")
        rollback(engine)
        checks["rolled_back_to"] = engine.memory_slot.active.folder.name
    checks["same_engine"] = id(engine) == engine_id
    checks["plain_chat_still_works"] = bool(engine.chat([{"role": "user", "content": "What is 2 plus 3?"}]).text
                                            is not None)
    engine.close()
    return checks


def _verdict(report: dict[str, Any]) -> dict[str, bool]:
    verdict = {"picked_>=95%": report["batch_1"]["picked"] >= 0.95,
               "exact_>=90%": report["batch_1"]["exact"] >= 0.90,
               "general_rise_<=5%": report["general_loss"]["rise"] <= 0.05,
               "consolidation_<=600s": report["consolidation_1_s"] <= 600}
    if "batch_1_after_batch_2" in report:
        verdict["batch_1_kept_>=85%"] = report["batch_1_after_batch_2"]["picked"] >= 0.85
    if "swap" in report:
        verdict["swapped_without_restart"] = bool(report["swap"]["same_engine"] and report["swap"]["path"] == "token")
    return verdict


def run_suite(ctx: Any, form: Any) -> Iterator[Any]:
    """``evaluate --suite consolidation``: the proof above, with its log lines as progress.

    The proof runs in a worker thread (it reports through a callback) while this generator relays
    each line as it comes; the tiny model and adapters stay in ``<outputs>/consolidation-proof``, so
    a second run reuses the pretrained base."""
    import queue
    import threading

    from localqwen.plugin_api import events as ev

    lines: queue.Queue[tuple[str, Any]] = queue.Queue()
    work = ctx.outputs_dir / "consolidation-proof"
    settings = ConsolidationSettings(threads=1)

    def work_through() -> None:
        try:
            report = run_proof(work, facts=form.facts, settings=settings, log=lambda line: lines.put(("log", line)))
            lines.put(("done", report))
        except Exception as exc:  # the relay must end; the error is shown, not swallowed
            lines.put(("error", exc))

    yield ev.Log(message=f"consolidation proof: {form.facts} facts per batch, two batches, in {work}")
    worker = threading.Thread(target=work_through, name="consolidation-proof", daemon=True)
    worker.start()
    while True:
        kind, value = lines.get()
        if kind == "log":
            yield ev.Log(message=str(value))
        elif kind == "error":
            yield ev.Error(message=f"the consolidation proof failed: {value}")
            yield ev.Done(status="failed", summary=str(value))
            return
        else:
            report = value
            break
    rows = [[name, "met" if ok else "missed"] for name, ok in report["ok"].items()]
    yield ev.Table(title="Consolidation proof", columns=["goal", "result"], rows=rows)
    first = report["batch_1"]
    yield ev.Done(status="ok", summary=f"picked {first['picked']:.1%}, exact {first['exact']:.1%}, general loss "
                                       f"{report['general_loss']['rise']:+.1%}, {report['consolidation_1_s']:.0f} s",
                  result=report)


__all__ = ["PROOF_MODEL", "RecallScores", "build_proof_model", "general_loss", "load_consolidated", "run_proof",
           "run_suite", "score_recall"]
