"""Consolidation training: memories into a LoRA adapter plus the memory head.

Step 1 (recall): LoRA + head so the hidden state at ``<recall>``, after any training wording of
a memory, scores highest against that memory's vector (cross-entropy over the whole bank at the
head's temperature, plus a cosine pull onto the vector) and the model learns to emit
``<recall>`` for such prompts.
Step 2 (mix): the same LoRA on a 1:1:1 mix of memory-in-full, memory-in-front and plain general
rows (rows.py), so the model decodes a memory's text after its injected vector and still answers
normally; the step-1 loss stays on as an auxiliary term so the head keeps working.
The head (memory_head.py) picks by attention pools over the prompt's token embeddings and has
its own learning rate; each memory also has a learnt slot added to its injected vector.
A second consolidation starts from the previous adapter and replays a sample of the memories it
already holds (those still valid: forgotten ones are dropped from the bank and never replayed).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localqwen_memory.consolidation.memory_head import (
    DEFAULT_TEMPERATURE,
    DEFAULT_THRESHOLD,
    MemoryBank,
    build_head,
    injection,
    load_head,
    query_features,
    save_head,
)
from localqwen_memory.consolidation.paraphrase import Augmented, augment
from localqwen_memory.consolidation.rows import IGNORE, Row, RowBuilder, collate
from localqwen_memory.consolidation.special_tokens import prepare_model_and_tokenizer

META_FILE = "consolidation.json"


@dataclass(frozen=True)
class MemoryItem:
    memory_id: str
    text: str
    vector: Any  # the store's vector (list, numpy or torch), any width


@dataclass
class ConsolidationSettings:
    rank: int = 16
    alpha: int = 32
    learning_rate: float = 3e-3
    head_learning_rate: float = 1e-2  # the memory head (query + inject): small, fresh, it can move fast
    head_into_lora: float = 0.1  # how much of the head's loss reaches the LoRA (1 = all of it)
    batch_size: int = 32
    # Passes over every training wording (step 1). 300 facts on the proof model (2026-11-27, same
    # run otherwise): 2 -> 94.8% picked (the goal is 95%), 3 -> 98.5%, for 30 s more.
    recall_epochs: float = 3.0
    # Passes over the memories in step 2 (each pass: one row of each kind per memory). 300 facts
    # on the tiny proof model: 18 -> 59% reproduced exactly, 28 -> 67%, 40 -> 93% (381 s; on a
    # busier CPU the time budget cuts it short); 20 facts: 120 -> 97.5% (bench_memory_consolidation.py).
    mix_epochs: float = 40.0
    replay: float = 0.5  # old memories replayed per new one (fraction of the step-2 and step-1 rows)
    head_weight: float = 1.0
    temperature: float = DEFAULT_TEMPERATURE
    threshold: float = DEFAULT_THRESHOLD
    max_seconds: float = 0.0  # 0 = no time budget; else both steps share it (step 2 gets what step 1 left)
    seed: int = 0
    threads: int = 0  # torch threads on CPU; 0 = torch's default (1 is fastest on a busy 2-core host)

    def __post_init__(self) -> None:
        for name in ("rank", "alpha", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if not 0 < self.threshold < 1:
            raise ValueError(f"threshold is a probability in (0, 1), got {self.threshold}")


@dataclass
class ConsolidationResult:
    output: Path
    memory_ids: list[str]  # newly learnt
    bank_ids: list[str]  # everything the adapter holds (new + kept old ones)
    steps: dict[str, int]
    seconds: float
    final_losses: dict[str, float]
    previous: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainProgress:
    phase: str  # "recall" | "mix"
    step: int
    total: int
    loss: float
    elapsed_s: float
    eta_s: float | None


def _as_tensor(vector: Any) -> Any:
    import torch

    return torch.as_tensor(vector, dtype=torch.float32).flatten()


def _bank_for(new: list[MemoryItem], previous: MemoryBank | None, keep_old: set[str] | None) -> MemoryBank:
    import torch

    bank = MemoryBank([m.memory_id for m in new], torch.stack([_as_tensor(m.vector) for m in new]))
    if previous is None:
        return bank
    kept = [i for i, memory_id in enumerate(previous.ids) if keep_old is None or memory_id in keep_old]
    if kept and previous.vectors.shape[1] != bank.vectors.shape[1]:
        raise ValueError(f"memory vectors changed width ({previous.vectors.shape[1]} -> {bank.vectors.shape[1]}): "
                         "the embedder changed; consolidate from the base model again (no previous adapter)")
    old_slots = previous.slots[kept] if previous.slots is not None and kept else None
    old = MemoryBank([previous.ids[i] for i in kept], previous.vectors[kept], old_slots) if kept else None
    return old.merged(bank) if old is not None else bank


def load_base(base_model: str | Path) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from localqwen.runtime.model_files import check_model_source

    check_model_source(base_model)  # the same gate as every other load: safetensors only
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32, use_safetensors=True)
    return model, tokenizer


def consolidate(base_model: str | Path, memories: list[MemoryItem], output: str | Path, *,
                general: list[tuple[str, str]], previous: str | Path | None = None,
                keep_old: set[str] | None = None, settings: ConsolidationSettings | None = None,
                engine: Any = None, on_progress: Callable[[TrainProgress], None] | None = None,
                cancel: Any = None) -> ConsolidationResult:
    """Learn ``memories`` into a new adapter folder ``output`` (LoRA + tokenizer + head + bank).

    ``general``: (question, answer) rows of plain instruction data for the mix. ``previous``: the
    adapter to continue from; ``keep_old``: which of its memories are still valid (None = all).
    ``engine``: when given, the model's own paraphrases join the templates."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    settings = settings or ConsolidationSettings()
    if not memories:
        raise ValueError("nothing to consolidate: no memories given")
    if len({m.memory_id for m in memories}) != len(memories):
        raise ValueError("memory ids must be unique")
    if not general:
        raise ValueError("consolidation needs general (question, answer) rows to keep the model answering normally")
    if settings.threads:
        torch.set_num_threads(settings.threads)
    started = time.monotonic()
    output = Path(output)
    rng = random.Random(settings.seed)
    torch.manual_seed(settings.seed)

    model, tokenizer = load_base(base_model)
    token_ids = prepare_model_and_tokenizer(model, tokenizer)
    previous_head = None
    if previous is not None:
        previous = Path(previous)
        previous_head = load_head(previous)
        model = PeftModel.from_pretrained(model, previous, is_trainable=True)
        head = previous_head.head
    else:
        config = LoraConfig(r=settings.rank, lora_alpha=settings.alpha, lora_dropout=0.0,
                            target_modules="all-linear", task_type="CAUSAL_LM")
        model = get_peft_model(model, config)
        hidden = model.get_input_embeddings().weight.shape[1]
        head = build_head(int(hidden), int(_as_tensor(memories[0].vector).shape[0]), pooled=True)
    head.train()
    model.train()

    bank = _bank_for(memories, previous_head.bank if previous_head else None, keep_old)
    # Every memory's slot (new ones start at zero) is trained with the head.
    bank = bank.with_slots(int(model.get_input_embeddings().weight.shape[1]))
    slots = torch.nn.Parameter(bank.slots.detach().clone().float())
    bank = MemoryBank(bank.ids, bank.vectors, slots)
    texts = dict(previous_head.texts) if previous_head else {}
    texts.update({m.memory_id: m.text for m in memories})
    index_of = {memory_id: i for i, memory_id in enumerate(bank.ids)}
    new_aug = [augment(m.memory_id, m.text, engine=engine) for m in memories]
    old_ids = [i for i in bank.ids if i not in {m.memory_id for m in memories}]
    replay_count = min(len(old_ids), math.ceil(settings.replay * len(memories)))
    builder = RowBuilder(tokenizer, token_ids)

    def recall_rows(augmented: list[Augmented]) -> list[Row]:
        return [builder.recall(p, index_of[a.memory_id]) for a in augmented for p in a.training_prompts]

    def mix_rows(augmented: list[Augmented]) -> list[Row]:
        rows = []
        for a in augmented:
            rows.append(builder.memory_full(rng.choice(a.questions), a.text, index_of[a.memory_id]))
            g_question, g_answer = rng.choice(general)
            rows.append(builder.memory_front(g_question, g_answer, a.text, index_of[a.memory_id]))
            rows.append(builder.plain(*rng.choice(general)))
        return rows

    def replay_sample() -> list[Augmented]:
        return [augment(i, texts[i]) for i in rng.sample(old_ids, replay_count)] if replay_count else []

    lora_params = [p for p in model.parameters() if p.requires_grad]
    head_params = list(head.parameters()) + [slots]
    optimizer = torch.optim.AdamW([{"params": lora_params, "base_lr": settings.learning_rate},
                                   {"params": head_params, "base_lr": settings.head_learning_rate}],
                                  lr=settings.learning_rate, weight_decay=0.0)
    vectors = bank.vectors

    def step(rows: list[Row]) -> tuple[float, float]:
        batch = collate(rows, tokenizer.pad_token_id)
        embeddings = model.get_input_embeddings()(batch["input_ids"])
        injected = batch["pad_position"] >= 0
        if injected.any():
            embeddings = embeddings.clone()
            rows_at = injected.nonzero().flatten()
            embeddings[rows_at, batch["pad_position"][rows_at]] = injection(
                head, bank, batch["memory_index"][rows_at]).to(embeddings.dtype)
        out = model(inputs_embeds=embeddings, attention_mask=batch["attention_mask"], output_hidden_states=True)
        logits = out.logits[:, :-1].float()
        targets = batch["labels"][:, 1:]
        lm = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                               ignore_index=IGNORE)
        asks = (batch["recall_position"] >= 0).nonzero().flatten()
        head_loss = torch.zeros((), dtype=lm.dtype)
        if len(asks):
            positions = batch["recall_position"][asks]
            prompt = torch.arange(batch["input_ids"].shape[1])[None, :] <= positions[:, None]
            hidden = query_features(head, out.hidden_states[-1][asks], positions, prompt, out.hidden_states[0][asks])
            # A pooled head reads the frozen token embeddings, so its loss never reaches the LoRA.
            # An unpooled one (an older adapter continued) passes only a share: at full strength
            # it bent the last hidden state so hard that the mix rows started step 2 at LM loss
            # ~9, above a uniform guess (measured, 20 facts).
            hidden = hidden.detach() + settings.head_into_lora * (hidden - hidden.detach())
            query = head.project(hidden)
            keys = torch.nn.functional.normalize(vectors, dim=-1)
            cosines = query @ keys.T
            target = batch["memory_index"][asks]
            head_loss = (torch.nn.functional.cross_entropy(cosines / settings.temperature, target)
                         + (1 - cosines[torch.arange(len(asks)), target]).mean())
        loss = lm + settings.head_weight * head_loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lora_params, 1.0)
        torch.nn.utils.clip_grad_norm_(head_params, 1.0)
        optimizer.step()
        return float(lm.detach()), float(head_loss.detach())

    def run_phase(phase: str, rows_for_epoch: Callable[[], list[Row]], epochs: float, budget_s: float) -> tuple[int, dict]:
        first = rows_for_epoch()
        total = max(1, math.ceil(len(first) * epochs / settings.batch_size))
        pool: list[Row] = []
        done, losses = 0, {"lm": float("nan"), "head": float("nan")}
        phase_start = time.monotonic()
        # Learning rate: short warm-up, then cosine to 10%.
        warmup = max(1, total // 20)
        while done < total:
            if cancel is not None and getattr(cancel, "cancelled", False):
                from localqwen.plugin_api import Cancelled

                raise Cancelled(getattr(cancel, "reason", "cancelled"))
            if len(pool) < settings.batch_size:
                fresh = first if first else rows_for_epoch()
                first = []
                rng.shuffle(fresh)
                pool.extend(fresh)
            rows, pool = pool[: settings.batch_size], pool[settings.batch_size:]
            scale = (done + 1) / warmup if done < warmup else 0.1 + 0.45 * (1 + math.cos(math.pi * done / total))
            for group in optimizer.param_groups:
                group["lr"] = group["base_lr"] * scale
            lm, head_loss = step(rows)
            losses = {"lm": 0.9 * losses["lm"] + 0.1 * lm if done else lm,
                      "head": 0.9 * losses["head"] + 0.1 * head_loss if done else head_loss}
            done += 1
            elapsed = time.monotonic() - phase_start
            if budget_s and elapsed >= budget_s:
                break
            if on_progress is not None:
                eta = elapsed / done * (total - done)
                on_progress(TrainProgress(phase, done, total, losses["lm"] + losses["head"], elapsed, eta))
        return done, losses

    budget = settings.max_seconds
    recall_budget = budget * 0.35 if budget else 0.0
    recall_steps, recall_losses = run_phase(
        "recall", lambda: recall_rows(new_aug + replay_sample()), settings.recall_epochs, recall_budget)
    mix_budget = max(1.0, budget - (time.monotonic() - started)) if budget else 0.0

    def mix_epoch() -> list[Row]:
        augmented = new_aug + replay_sample()
        # A few recall rows keep step 1's wordings in view while the LoRA moves.
        extra = [builder.recall(rng.choice(a.training_prompts), index_of[a.memory_id]) for a in augmented]
        return mix_rows(augmented) + extra

    mix_steps, mix_losses = run_phase("mix", mix_epoch, settings.mix_epochs, mix_budget)

    model.eval()
    head.eval()
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    bank = MemoryBank(bank.ids, bank.vectors, slots.detach().clone())
    save_head(output, head, bank, temperature=settings.temperature, threshold=settings.threshold, texts=texts)
    result = ConsolidationResult(
        output=output, memory_ids=[m.memory_id for m in memories], bank_ids=list(bank.ids),
        steps={"recall": recall_steps, "mix": mix_steps}, seconds=round(time.monotonic() - started, 1),
        final_losses={"recall_lm": recall_losses["lm"], "recall_head": recall_losses["head"],
                      "mix_lm": mix_losses["lm"], "mix_head": mix_losses["head"]},
        previous=str(previous) if previous else None, settings=asdict(settings))
    from localqwen.atomic import atomic_write_text

    meta = {**asdict(result), "output": str(output), "base_model": str(base_model), "created_at": time.time()}
    atomic_write_text(output / META_FILE, json.dumps(meta, indent=2))
    return result
