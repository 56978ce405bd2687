"""Split document blocks into overlapping token windows that keep their page and heading path.

Windows are measured in the embedding model's own tokens (so a chunk never gets silently
truncated by the encoder) and cut on token boundaries mapped back to character offsets, so chunk
text is an exact slice of the source. Window ends prefer a sentence or line break near the limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from localqwen.retrieval.loaders import Block

# text -> list of (start, end) character offsets, one per token
OffsetsFn = Callable[[str], list[tuple[int, int]]]

_WORDISH = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|\w+|[^\w\s]")


def regex_offsets(text: str) -> list[tuple[int, int]]:
    """A model-free tokenization (words, punctuation, one token per CJK character)."""
    return [m.span() for m in _WORDISH.finditer(text)]


def hf_offsets(tokenizer) -> OffsetsFn:
    """Offsets from a Hugging Face fast tokenizer (the embedding model's)."""

    def offsets(text: str) -> list[tuple[int, int]]:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False,
                            verbose=False)
        return [tuple(span) for span in encoded["offset_mapping"] if span[1] > span[0]]

    return offsets


@dataclass
class Chunk:
    text: str
    page: int | None
    heading: str  # "Intro > Methods"
    index: int  # position in the document
    tokens: int


def chunk_blocks(blocks: Iterable[Block], offsets_fn: OffsetsFn = regex_offsets, *, max_tokens: int = 200,
                 overlap: int = 40) -> list[Chunk]:
    if max_tokens < 8:
        raise ValueError("max_tokens must be at least 8")
    if not 0 <= overlap < max_tokens // 2 + 1:
        raise ValueError("overlap must be between 0 and half of max_tokens")
    chunks: list[Chunk] = []
    for block in blocks:
        text = block.text
        spans = offsets_fn(text)
        if not spans:
            continue
        heading = " > ".join(block.headings)
        start = 0
        while start < len(spans):
            end = min(start + max_tokens, len(spans))
            if end < len(spans):
                end = _nicer_end(text, spans, start, end)
            piece = text[spans[start][0]:spans[end - 1][1]].strip()
            if piece:
                chunks.append(Chunk(piece, block.page, heading, len(chunks), end - start))
            if end >= len(spans):
                break
            start = max(end - overlap, start + 1)
    return chunks


def _nicer_end(text: str, spans: list[tuple[int, int]], start: int, end: int) -> int:
    """Move the cut back (at most a quarter window) to just after a sentence or line end."""
    floor = start + max(1, (end - start) * 3 // 4)
    for cut in range(end, floor, -1):
        last = text[spans[cut - 1][0]:spans[cut - 1][1]]
        gap = text[spans[cut - 1][1]:spans[cut][0]] if cut < len(spans) else ""
        if last in {".", "!", "?", "。", "！", "？"} or "\n" in gap:
            return cut
    return end
