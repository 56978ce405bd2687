"""The two tokens token recall needs: ``<recall>`` (the model asks for a memory) and
``<|memory_pad|>`` (the slot whose embedding is replaced by the chosen memory).

Qwen's embedding matrices are larger than their tokenizers (rounded up), so adding two tokens
usually needs no resize; when it does, the matrix grows and the new rows start at the mean of
the old ones (transformers' ``mean_resizing``), so they are trained from a sensible point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RECALL = "<recall>"
MEMORY_PAD = "<|memory_pad|>"
MEMORY_TOKENS = (RECALL, MEMORY_PAD)


@dataclass(frozen=True)
class MemoryTokenIds:
    recall: int
    memory_pad: int

    @property
    def ids(self) -> list[int]:
        return [self.recall, self.memory_pad]


def add_memory_tokens(tokenizer: Any) -> MemoryTokenIds:
    """Add both tokens (as special tokens, so decoding skips them) when missing; idempotent."""
    from tokenizers import AddedToken

    missing = [t for t in MEMORY_TOKENS if t not in tokenizer.get_vocab()]
    if missing:
        tokenizer.add_special_tokens(
            {"additional_special_tokens": [AddedToken(t, special=True, normalized=False) for t in missing]},
            replace_extra_special_tokens=False,
        )
    return memory_token_ids(tokenizer)


def memory_token_ids(tokenizer: Any) -> MemoryTokenIds:
    """The two ids; raises when the tokenizer was never prepared for token recall."""
    vocab = tokenizer.get_vocab()
    absent = [t for t in MEMORY_TOKENS if t not in vocab]
    if absent:
        raise ValueError(f"the tokenizer has no {', '.join(absent)}: it was not prepared for token recall "
                         "(consolidate first, or load the tokenizer saved with the memory adapter)")
    return MemoryTokenIds(recall=vocab[RECALL], memory_pad=vocab[MEMORY_PAD])


def fit_embeddings(model: Any, tokenizer: Any) -> bool:
    """Grow the model's embeddings when the tokenizer outgrew them; returns whether it resized."""
    rows = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) <= rows:
        return False
    model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    return True


def set_token_rows(model: Any, ids: MemoryTokenIds) -> None:
    """Give the two rows a fixed start: the mean embedding plus a small seeded offset.

    Qwen's spare rows may hold anything (or zeros, which could never be predicted); the rows are
    set the same way at training and at loading, so the adapter sees the rows it was trained
    with. (PEFT's trainable-token rows would keep them in the adapter, but they made each CPU
    step 4-10x slower on the tiny model, measured.)"""
    import torch

    with torch.no_grad():
        for matrix in {id(m): m for m in (model.get_input_embeddings().weight,
                                          getattr(model.get_output_embeddings(), "weight", None))
                       if m is not None}.values():
            known = matrix[: min(ids.ids)].float()
            generator = torch.Generator().manual_seed(1234)
            offset = torch.randn((2, matrix.shape[1]), generator=generator) * known.std(dim=0, keepdim=True)
            matrix[ids.ids] = (known.mean(dim=0, keepdim=True) + offset).to(matrix.dtype)


def prepare_model_and_tokenizer(model: Any, tokenizer: Any) -> MemoryTokenIds:
    """Add the tokens and make room for them in the model (the one call training and loading use)."""
    ids = add_memory_tokens(tokenizer)
    fit_embeddings(model, tokenizer)
    set_token_rows(model, ids)
    return ids
