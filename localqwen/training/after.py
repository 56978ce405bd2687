"""After training: evaluate on held-out rows, compare base vs. tuned, merge a LoRA, convert to GGUF.

``merge_lora`` lives in merge.py (the GGUF export uses it too) and is re-exported here.

A task metric is ``metric(predictions, references) -> {name: value}``; ``exact_match`` is the
built-in one (the shapes proof uses it), plugins add theirs with ``extensions.add_metric`` and the
caller passes the mapping to choose from (no module-level registry).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.training.collator import load_image
from localqwen.training.data import message_images
from localqwen.training.merge import merge_lora as merge_lora

Metric = Callable[[list[str], list[str]], dict[str, float]]


def exact_match(predictions: list[str], references: list[str]) -> dict[str, float]:
    hits = sum(p.strip().lower() == r.strip().lower() for p, r in zip(predictions, references, strict=False))
    return {"exact_match": hits / max(1, len(references))}


def builtin_metrics() -> dict[str, Metric]:
    """The task metrics LocalQwen ships itself (a fresh dict: callers may add to it)."""
    return {"exact_match": exact_match}


def get_metric(metrics: Mapping[str, Metric], name: str) -> Metric | None:
    """The metric called ``name`` in ``metrics`` (the app's ``Extensions.metrics``: the built-ins plus
    what plugins registered); ``none`` (or empty) means loss only."""
    if name in ("", "none"):
        return None
    if name not in metrics:
        raise KeyError(f"unknown metric '{name}' (registered: {', '.join(sorted(metrics))}, or none)")
    return metrics[name]


def split_prompt(row: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """(messages before the last assistant turn, that turn's text): what to prompt and expect."""
    messages = row["messages"]
    last = max(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    content = messages[last].get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return messages[:last], str(content or "")


def generate(model: Any, processor: Any, prompts: list[list[dict[str, Any]]], *, max_new_tokens: int = 32,
             batch_size: int = 16, tools: list[Any] | None = None) -> list[str]:
    """Greedy answers for each prompt (batched, left-padded)."""
    import torch

    tokenizer = getattr(processor, "tokenizer", processor)
    is_processor = hasattr(processor, "image_processor")
    owner = processor if is_processor else tokenizer
    answers: list[str] = []
    model.eval()
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        texts = [owner.apply_chat_template(p, tools=tools, tokenize=False, add_generation_prompt=True) for p in chunk]
        images = [load_image(i) for p in chunk for i in message_images(p)]
        if is_processor:
            inputs = processor(text=texts, images=images or None, padding=True, padding_side="left", return_tensors="pt")
        else:
            inputs = tokenizer(texts, padding=True, padding_side="left", return_tensors="pt", add_special_tokens=False)
        inputs = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        with torch.no_grad():
            output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                    pad_token_id=tokenizer.pad_token_id)
        new_tokens = output[:, inputs["input_ids"].shape[1]:]
        answers.extend(t.strip() for t in tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
    return answers


@dataclass
class EvalResult:
    loss: float | None
    metrics: dict[str, float] = field(default_factory=dict)
    predictions: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)


def evaluate(model: Any, processor: Any, rows: list[dict[str, Any]], *, metric: Metric | None = exact_match,
             max_new_tokens: int = 32, batch_size: int = 16) -> EvalResult:
    """Held-out loss (assistant tokens only) plus the task metric over greedy answers."""
    loss = heldout_loss(model, processor, rows, batch_size=batch_size)
    predictions: list[str] = []
    references: list[str] = []
    metrics: dict[str, float] = {}
    if metric is not None:
        pairs = [split_prompt(r) for r in rows]
        predictions = generate(model, processor, [p for p, _ in pairs], max_new_tokens=max_new_tokens,
                               batch_size=batch_size)
        references = [ref for _, ref in pairs]
        metrics = metric(predictions, references)
    return EvalResult(loss, metrics, predictions, references)


def heldout_loss(model: Any, processor: Any, rows: list[dict[str, Any]], *, batch_size: int = 16) -> float | None:
    import torch

    from localqwen.training.collator import ChatCollator

    if not rows:
        return None
    collator = ChatCollator(processor)
    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            batch = collator(rows[start : start + batch_size])
            batch = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in batch.items()}
            labels = batch.pop("labels")
            logits = model(**batch).logits[:, :-1].float()
            target = labels[:, 1:]
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                                                     ignore_index=-100, reduction="sum")
            total += float(loss)
            count += int((target != -100).sum())
    return total / count if count else math.nan


def sequence_logprob(model: Any, processor: Any, prompt: list[dict[str, Any]], answer: str) -> float:
    """Sum of log-probabilities of ``answer`` as the assistant reply to ``prompt``."""
    import torch

    from localqwen.training.collator import ChatCollator

    collator = ChatCollator(processor)
    batch = collator([{"messages": [*prompt, {"role": "assistant", "content": answer}]}])
    labels = batch.pop("labels")
    with torch.no_grad():
        logits = model(**{k: v.to(model.device) for k, v in batch.items()}).logits[:, :-1].float()
    target = labels[:, 1:].to(logits.device)
    logprobs = torch.log_softmax(logits, dim=-1)
    mask = target != -100
    picked = logprobs.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return float((picked * mask).sum())


def preference_accuracy(model: Any, processor: Any, rows: list[dict[str, Any]]) -> float:
    """Share of DPO rows whose chosen answer is more likely than the rejected one."""
    wins = 0
    for row in rows:
        prompt = row["prompt"] if isinstance(row["prompt"], list) else [{"role": "user", "content": row["prompt"]}]
        chosen = row["chosen"] if isinstance(row["chosen"], str) else row["chosen"][-1]["content"]
        rejected = row["rejected"] if isinstance(row["rejected"], str) else row["rejected"][-1]["content"]
        wins += sequence_logprob(model, processor, prompt, chosen) > sequence_logprob(model, processor, prompt, rejected)
    return wins / max(1, len(rows))


def compare(base: tuple[Any, Any], tuned: tuple[Any, Any], rows: list[dict[str, Any]], *,
            max_new_tokens: int = 32) -> tuple[list[str], list[list[Any]]]:
    """Side-by-side table: prompt, expected, base answer, tuned answer."""
    pairs = [split_prompt(r) for r in rows]
    prompts = [p for p, _ in pairs]
    base_answers = generate(base[0], base[1], prompts, max_new_tokens=max_new_tokens)
    tuned_answers = generate(tuned[0], tuned[1], prompts, max_new_tokens=max_new_tokens)
    table = []
    for (prompt, expected), before, after in zip(pairs, base_answers, tuned_answers, strict=False):
        user = next((m for m in reversed(prompt) if m.get("role") == "user"), {"content": ""})
        content = user["content"]
        text = content if isinstance(content, str) else " ".join(
            p.get("text", "") if p.get("type") == "text" else f"[image {Path(str(p.get('image'))).name}]" for p in content)
        table.append([text, expected, before, after])
    return ["prompt", "expected", "base", "tuned"], table


# ---------------------------------------------------------------------------------------------
# Merge and export


def export_gguf(model_dir: str | Path, out_file: str | Path, *, outtype: str = "f16") -> Path:
    """Convert a whole model folder to one float GGUF file (llama.cpp's converter, made available from
    the llama-cpp-python source distribution). The full export (adapter merge, quantizing, mmproj,
    Ollama / LM Studio snippets) is ``localqwen.training.gguf_export.export_gguf``."""
    from localqwen.training.gguf_export import convert_model

    return convert_model(model_dir, out_file, outtype=outtype)
