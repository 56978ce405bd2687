"""Training rows for consolidation, tokenized.

- ``recall``: a wording of a memory -> the model emits ``<recall>``; the hidden state there is
  pulled onto the memory's vector (step 1, and kept as an auxiliary loss in step 2).
- ``memory_full``: a question about the memory -> ``<recall><|memory_pad|>`` + the memory's
  text: the model asks, gets the memory injected and decodes it.
- ``memory_front``: an unrelated general question with a memory injected in front of the
  answer: the text is decoded from the vector alone and the answer that follows stays normal.
- ``plain``: a general row, so the model still answers normally (and does not ask to recall).
Step 2 mixes the last three 1:1:1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from localqwen_memory.consolidation.special_tokens import MemoryTokenIds

IGNORE = -100
END_OF_MEMORY = "\n"  # the memory's text ends at the first newline (token recall stops there)


@dataclass
class Row:
    kind: str
    input_ids: list[int]
    labels: list[int]
    memory_index: int = -1  # into the bank; -1: no memory
    recall_position: int = -1  # where the head reads the hidden state (only for rows that ask to recall)
    pad_position: int = -1  # where the memory's vector is injected


class RowBuilder:
    """Tokenizes rows with the model's own chat template, the way the engine renders prompts."""

    def __init__(self, tokenizer: Any, token_ids: MemoryTokenIds) -> None:
        self.tokenizer = tokenizer
        self.ids = token_ids
        self.end_ids = tokenizer.encode("<|im_end|>", add_special_tokens=False)
        self._prompt_cache: dict[str, list[int]] = {}

    def prompt(self, question: str) -> list[int]:
        cached = self._prompt_cache.get(question)
        if cached is None:
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                                      add_generation_prompt=True, tokenize=False)
            cached = self.tokenizer.encode(text, add_special_tokens=False)
            self._prompt_cache[question] = cached
        return list(cached)

    def _text(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def recall(self, prompt: str, memory_index: int) -> Row:
        ids = self.prompt(prompt) + [self.ids.recall]
        labels = [IGNORE] * (len(ids) - 1) + [self.ids.recall]
        return Row("recall", ids, labels, memory_index, recall_position=len(ids) - 1)

    def memory_full(self, question: str, memory_text: str, memory_index: int) -> Row:
        prompt = self.prompt(question)
        # The memory's text and the end of the turn: the chat answers from the stored text (token
        # recall only picks and shows), and a restating answer after it was a dozen tokens of
        # noise per row (a random wording) that drowned the memory's own tokens in the loss.
        tail = self._text(memory_text + END_OF_MEMORY) + self.end_ids
        ids = prompt + [self.ids.recall, self.ids.memory_pad] + tail
        labels = [IGNORE] * len(prompt) + [self.ids.recall, IGNORE] + tail
        return Row("memory_full", ids, labels, memory_index, recall_position=len(prompt),
                   pad_position=len(prompt) + 1)

    def memory_front(self, question: str, answer: str, memory_text: str, memory_index: int) -> Row:
        prompt = self.prompt(question)
        tail = self._text(memory_text + END_OF_MEMORY + answer) + self.end_ids
        ids = prompt + [self.ids.recall, self.ids.memory_pad] + tail
        # <recall> is given, not asked for: a general question must not learn to trigger it.
        labels = [IGNORE] * (len(prompt) + 2) + tail
        return Row("memory_front", ids, labels, memory_index, pad_position=len(prompt) + 1)

    def plain(self, question: str, answer: str) -> Row:
        prompt = self.prompt(question)
        tail = self._text(answer) + self.end_ids
        return Row("plain", prompt + tail, [IGNORE] * len(prompt) + tail)


def collate(rows: list[Row], pad_id: int) -> dict[str, Any]:
    """Right-padded tensors plus the per-row positions the losses need."""
    import torch

    width = max(len(row.input_ids) for row in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        n = len(row.input_ids)
        input_ids[i, :n] = torch.tensor(row.input_ids)
        labels[i, :n] = torch.tensor(row.labels)
        mask[i, :n] = 1
    return {
        "input_ids": input_ids, "labels": labels, "attention_mask": mask,
        "memory_index": torch.tensor([row.memory_index for row in rows]),
        "recall_position": torch.tensor([row.recall_position for row in rows]),
        "pad_position": torch.tensor([row.pad_position for row in rows]),
    }
