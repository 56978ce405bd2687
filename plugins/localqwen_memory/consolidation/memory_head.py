"""The memory head: the hidden state at ``<recall>`` -> a vector in the memory store's space,
scored by cosine against the consolidated memories' vectors; top-1 with a confidence threshold.

It also holds the way back: a memory's vector -> the embedding that replaces ``<|memory_pad|>``
(the store's embedder and the model have different widths, so both directions are learnt), plus a
learnt offset per memory (the bank's ``slots``): sentence vectors of facts that differ in one
name are nearly parallel, and a shared projection alone had to pull them apart for the decoder.
Confidence is the softmax of the cosines at the trained temperature: below the threshold there
is no token recall and the caller falls back to text recall.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEAD_WEIGHTS = "memory_head.safetensors"
HEAD_CONFIG = "memory_head.json"
BANK_WEIGHTS = "memory_bank.safetensors"
BANK_IDS = "memory_bank.json"

DEFAULT_TEMPERATURE = 0.05
DEFAULT_THRESHOLD = 0.5
# The embedder whose vectors key the consolidated memories: MiniLM, whichever embedder text recall
# reads with. The proof (``consolidation_eval``) was measured with it; bge-small's vectors, the
# chat's reader, sit closer together, and the quick proof picked the right memory for 55% of the
# questions with them against 80% with MiniLM's (2026-11-27, same run settings).
KEY_EMBEDDER = "offline:all-MiniLM-L6-v2"


@dataclass(frozen=True)
class HeadChoice:
    memory_id: str | None  # None: nothing confident enough
    index: int
    confidence: float  # softmax probability of the top memory
    cosine: float


POOL_HEADS = 4  # a person's first name, last name, the attribute: each can get its own pool


def build_head(hidden_size: int, memory_dim: int, *, pooled: bool = False) -> Any:
    """A fresh head (torch module): ``query`` hidden -> memory space, ``inject`` memory -> hidden.

    ``pooled``: the query reads ``POOL_HEADS`` attention pools of the prompt's token embeddings
    (``query_features``) instead of the hidden state at ``<recall>``."""
    from torch import nn

    class MemoryHead(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hidden_size, self.memory_dim, self.pooled = hidden_size, memory_dim, pooled
            width = POOL_HEADS * hidden_size if pooled else hidden_size
            # Attention pooling over the prompt: learnt scores per position and pool.
            self.pool = nn.Linear(hidden_size, POOL_HEADS) if pooled else None
            self.query = nn.Sequential(nn.Linear(width, hidden_size), nn.GELU(),
                                       nn.Linear(hidden_size, memory_dim))
            self.inject = nn.Sequential(nn.Linear(memory_dim, hidden_size), nn.GELU(),
                                        nn.Linear(hidden_size, hidden_size))

        def project(self, hidden: Any) -> Any:
            """Unit vectors in the memory space."""
            from torch.nn import functional

            return functional.normalize(self.query(hidden.float()), dim=-1)

        def embed(self, vectors: Any) -> Any:
            return self.inject(vectors.float())

    return MemoryHead()


def query_features(head: Any, states: Any, positions: Any, mask: Any, tokens: Any = None) -> Any:
    """What the head's query reads for each row.

    Unpooled head: the last layer's state at ``<recall>`` (``positions``). Pooled head:
    ``POOL_HEADS`` attention-weighted means of the prompt's token embeddings ``tokens`` (the
    model's input layer; ``mask`` is 1 on the prompt; the head learns which words matter). The
    state at ``<recall>`` learnt the training wordings but picked the right memory for under
    half of the held-out questions, and with it beside a pool 58-68%; the pool alone 85% (20
    facts, measured): the names' embeddings are the same whatever frame surrounds them."""
    import torch

    if not getattr(head, "pooled", False):
        return states[torch.arange(states.shape[0]), positions]
    tokens = states if tokens is None else tokens
    scores = head.pool(tokens.float()).masked_fill(~mask.bool().unsqueeze(-1), float("-inf"))
    weights = torch.softmax(scores, dim=1).to(tokens.dtype)  # [batch, positions, pools]
    return torch.einsum("bph,bpk->bkh", tokens, weights).flatten(1)


def cosine_scores(head: Any, hidden: Any, bank: Any) -> Any:
    """[batch, memories] cosines between projected hidden states and the (unit) bank vectors."""
    from torch.nn import functional

    return head.project(hidden) @ functional.normalize(bank.float(), dim=-1).T


def choose(head: Any, hidden: Any, bank: Any, ids: list[str], *, temperature: float = DEFAULT_TEMPERATURE,
           threshold: float = DEFAULT_THRESHOLD, allowed: set[str] | None = None) -> list[HeadChoice]:
    """Top-1 memory per hidden state; memories outside ``allowed`` (e.g. forgotten) never win."""
    import torch

    if len(ids) != bank.shape[0]:
        raise ValueError(f"{len(ids)} memory ids for {bank.shape[0]} vectors")
    if not ids:
        return [HeadChoice(None, -1, 0.0, 0.0) for _ in range(hidden.shape[0])]
    with torch.no_grad():
        cosines = cosine_scores(head, hidden, bank)
        if allowed is not None:
            mask = torch.tensor([memory_id not in allowed for memory_id in ids], dtype=torch.bool)
            cosines = cosines.masked_fill(mask, -2.0)  # below any cosine
        probabilities = torch.softmax(cosines / temperature, dim=-1)
        best = probabilities.argmax(dim=-1)
    choices = []
    for row, index in enumerate(best.tolist()):
        confidence = float(probabilities[row, index])
        cosine = float(cosines[row, index])
        confident = confidence >= threshold and cosine > -2.0
        choices.append(HeadChoice(ids[index] if confident else None, index, confidence, cosine))
    return choices


@dataclass
class MemoryBank:
    """The memories one adapter learnt: their ids and vectors (the head scores against these),
    and per memory the learnt offset added to its injected embedding (``slots``; None = zeros)."""

    ids: list[str]
    vectors: Any  # torch [n, dim]
    slots: Any = None  # torch [n, hidden] or None

    def __post_init__(self) -> None:
        if len(self.ids) != int(self.vectors.shape[0]):
            raise ValueError(f"{len(self.ids)} ids for {int(self.vectors.shape[0])} vectors")
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("memory ids in a bank must be unique")
        if self.slots is not None and int(self.slots.shape[0]) != len(self.ids):
            raise ValueError(f"{int(self.slots.shape[0])} slots for {len(self.ids)} memories")

    def vector(self, memory_id: str) -> Any:
        return self.vectors[self.ids.index(memory_id)]

    def with_slots(self, hidden_size: int) -> MemoryBank:
        """This bank with a slot for every memory (zeros where it had none)."""
        import torch

        if self.slots is not None:
            if int(self.slots.shape[1]) != hidden_size:
                raise ValueError(f"slots are {int(self.slots.shape[1])} wide, the model is {hidden_size}")
            return self
        return MemoryBank(self.ids, self.vectors, torch.zeros(len(self.ids), hidden_size))

    def merged(self, other: MemoryBank) -> MemoryBank:
        """This bank with ``other``'s memories added (``other`` wins for an id in both)."""
        import torch

        keep = [i for i, memory_id in enumerate(self.ids) if memory_id not in set(other.ids)]
        ids = [self.ids[i] for i in keep] + list(other.ids)
        vectors = torch.cat([self.vectors[keep], other.vectors]) if keep else other.vectors
        if self.slots is None and other.slots is None:
            return MemoryBank(ids, vectors)
        width = int((self.slots if self.slots is not None else other.slots).shape[1])
        mine, theirs = self.with_slots(width).slots, other.with_slots(width).slots
        return MemoryBank(ids, vectors, torch.cat([mine[keep], theirs]) if keep else theirs)


def injection(head: Any, bank: MemoryBank, indices: Any) -> Any:
    """The embeddings that replace ``<|memory_pad|>`` for the bank's memories at ``indices``:
    the head's projection of their vectors plus their learnt slots. Training and decoding both
    call this, so the model always sees the same injection."""
    embedded = head.embed(bank.vectors[indices])
    return embedded if bank.slots is None else embedded + bank.slots[indices].to(embedded.dtype)


def save_head(folder: Path, head: Any, bank: MemoryBank, *, temperature: float, threshold: float,
              texts: dict[str, str]) -> None:
    """Write the head, its settings and the bank (with the texts learnt, for checks) beside the adapter."""
    from safetensors.torch import save_file

    from localqwen.atomic import atomic_write_text

    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous() for k, v in head.state_dict().items()}, str(folder / HEAD_WEIGHTS))
    tensors = {"vectors": bank.vectors.detach().float().contiguous()}
    if bank.slots is not None:
        tensors["slots"] = bank.slots.detach().float().contiguous()
    save_file(tensors, str(folder / BANK_WEIGHTS))
    atomic_write_text(folder / HEAD_CONFIG, json.dumps({
        "hidden_size": head.hidden_size, "memory_dim": head.memory_dim, "pooled": head.pooled,
        "temperature": temperature, "threshold": threshold}, indent=2))
    atomic_write_text(folder / BANK_IDS, json.dumps({"ids": bank.ids, "texts": [texts.get(i, "") for i in bank.ids]},
                                                    ensure_ascii=False, indent=1))


@dataclass
class LoadedHead:
    head: Any
    bank: MemoryBank
    texts: dict[str, str]
    temperature: float
    threshold: float


def load_head(folder: Path) -> LoadedHead:
    from safetensors.torch import load_file

    config_path = folder / HEAD_CONFIG
    if not config_path.is_file():
        raise FileNotFoundError(f"{folder} has no {HEAD_CONFIG}: it is not a memory adapter")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    head = build_head(int(config["hidden_size"]), int(config["memory_dim"]), pooled=bool(config.get("pooled")))
    head.load_state_dict(load_file(str(folder / HEAD_WEIGHTS)))
    head.eval()
    listing = json.loads((folder / BANK_IDS).read_text(encoding="utf-8"))
    tensors = load_file(str(folder / BANK_WEIGHTS))
    bank = MemoryBank(list(listing["ids"]), tensors["vectors"], tensors.get("slots"))  # older adapters: no slots
    return LoadedHead(head, bank, dict(zip(listing["ids"], listing["texts"], strict=True)),
                      float(config["temperature"]), float(config["threshold"]))
