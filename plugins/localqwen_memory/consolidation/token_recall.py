"""Token recall at chat time.

The model is asked the question; when its first answer token is ``<recall>``, the hidden state
there goes through the memory head, which picks a consolidated memory (top-1 above the
confidence threshold, never a forgotten one). That memory's vector is injected as the embedding
of ``<|memory_pad|>`` (inputs_embeds) and the model decodes the memory's text up to the first
newline. Anything else (no ``<recall>``, low confidence, a memory not consolidated yet) falls
back to text recall (the caller's ``text_recall``, e.g. the plugin's recall.py). The outcome
names the path taken so the UI can show it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from localqwen_memory.consolidation.memory_head import (
    HeadChoice,
    LoadedHead,
    choose,
    injection,
    query_features,
)
from localqwen_memory.consolidation.rows import END_OF_MEMORY
from localqwen_memory.consolidation.special_tokens import memory_token_ids

Path_ = Literal["token", "text", "none"]


@dataclass
class Probe:
    """What the model did at the start of its answer to one prompt."""

    asked: bool  # its first token would be <recall>
    choice: HeadChoice


@dataclass
class RecallOutcome:
    path: Path_
    reason: str
    memory_id: str | None = None
    text: str = ""  # the memory's text as the model decoded it (token path)
    confidence: float = 0.0
    hits: list[Any] = field(default_factory=list)  # text recall's results (text path)


class TokenRecaller:
    """Token recall over a loaded model (base + memory adapter), its tokenizer and head."""

    def __init__(self, model: Any, tokenizer: Any, head: LoadedHead, *, lock: Any = None) -> None:
        # ``lock``: the engine's generation lock, so a hot-swap never lands in the middle of a recall.
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self.model = model
        self.tokenizer = tokenizer
        self.head = head
        self.ids = memory_token_ids(tokenizer)

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _left_pad(self, rows: list[list[int]]) -> tuple[Any, Any, Any]:
        import torch

        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        return ids, mask, positions

    def probe(self, prompts: list[list[int]], *, allowed: set[str] | None = None) -> list[Probe]:
        """Would the model ask to recall, and which memory would the head pick (batched)."""
        import torch

        rows = [p + [self.ids.recall] for p in prompts]
        ids, mask, positions = self._left_pad(rows)
        with torch.no_grad():
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, output_hidden_states=True)
        asked = (out.logits[:, -2].argmax(-1) == self.ids.recall).tolist()
        states = out.hidden_states[-1]
        last = torch.full((states.shape[0],), states.shape[1] - 1)
        features = query_features(self.head.head, states, last, mask, out.hidden_states[0])
        choices = choose(self.head.head, features, self.head.bank.vectors, self.head.bank.ids,
                         temperature=self.head.temperature, threshold=self.head.threshold, allowed=allowed)
        return [Probe(bool(a), c) for a, c in zip(asked, choices, strict=True)]

    def decode(self, prompts: list[list[int]], memory_ids: list[str], *, max_new_tokens: int = 48) -> list[str]:
        """Inject each memory's vector after ``<recall>`` and greedily decode its text (batched)."""
        import torch

        rows = [p + [self.ids.recall, self.ids.memory_pad] for p in prompts]
        ids, mask, positions = self._left_pad(rows)
        embeddings = self.model.get_input_embeddings()(ids)
        with torch.no_grad():
            indices = torch.tensor([self.head.bank.ids.index(m) for m in memory_ids])
            embeddings = embeddings.clone()
            embeddings[:, -1] = injection(self.head.head, self.head.bank, indices).to(embeddings.dtype)
            out = self.model(inputs_embeds=embeddings, attention_mask=mask, position_ids=positions, use_cache=True)
            generated: list[list[int]] = [[] for _ in rows]
            finished = [False] * len(rows)
            stop_ids = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
            for _ in range(max_new_tokens):
                nxt = out.logits[:, -1].argmax(-1)
                for row, token in enumerate(nxt.tolist()):
                    if finished[row]:
                        continue
                    generated[row].append(token)
                    if token in stop_ids or END_OF_MEMORY in self.tokenizer.decode(generated[row][-2:]):
                        finished[row] = True
                if all(finished):
                    break
                mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=mask.dtype)], dim=1)
                positions = positions[:, -1:] + 1
                out = self.model(input_ids=nxt[:, None], attention_mask=mask, position_ids=positions,
                                 past_key_values=out.past_key_values, use_cache=True)
        texts = []
        for tokens in generated:
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            texts.append(text.split(END_OF_MEMORY, 1)[0].strip())
        return texts

    def recall(self, messages: list[dict[str, Any]], *, allowed: set[str] | None = None,
               text_recall: Callable[[str], list[Any]] | None = None, max_new_tokens: int = 48) -> RecallOutcome:
        """Token recall for the last user message, or text recall when it cannot be used.

        ``allowed``: the memory ids still valid (forgotten ones are excluded at once, before the
        next consolidation removes them from the weights)."""
        prompt = self.prompt_ids(messages)
        with self.lock:
            probe = self.probe([prompt], allowed=allowed)[0]
            text = ""
            if probe.asked and probe.choice.memory_id is not None:
                text = self.decode([prompt], [probe.choice.memory_id], max_new_tokens=max_new_tokens)[0]
        if probe.asked and probe.choice.memory_id is not None:
            return RecallOutcome("token", "the model asked to recall and the head was confident",
                                 probe.choice.memory_id, text, probe.choice.confidence)
        if not probe.asked:
            reason = "the model did not ask to recall (the memory may not be consolidated yet)"
        else:
            reason = f"the head was not confident enough ({probe.choice.confidence:.2f} < {self.head.threshold:.2f})"
        question = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
        hits = text_recall(question if isinstance(question, str) else str(question)) if text_recall else []
        if hits:
            return RecallOutcome("text", reason + "; used text recall", hits=list(hits),
                                 confidence=probe.choice.confidence)
        return RecallOutcome("none", reason + "; text recall found nothing", confidence=probe.choice.confidence)
