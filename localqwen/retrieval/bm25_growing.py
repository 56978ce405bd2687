"""BM25 over rows that only ever get appended, extended in place of being rebuilt.

The memory store's index changes after every chat turn (each turn adds memories), and rebuilding a
``bm25s`` index over all of a persona's memories for each search made a search after a write cost
~7x a plain one (``bench/bench_memory_write_search.py``). This index keeps postings lists that
grow: adding rows touches only their terms. It scores the Lucene variant exactly as ``bm25s``
does (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, ``tf / (k1 * (1 - b + b * dl / avgdl) + tf)``,
a repeated query word counted each time), which a test checks against ``bm25s``.

:meth:`GrowingBM25.extended` returns a new index sharing the postings with the old one; the old
one keeps scoring only its own first ``size`` rows with its own statistics, so a search that still
holds it (another thread) is never disturbed by the write.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from typing import TYPE_CHECKING

from localqwen.retrieval.bm25 import Tokenizer, top_scored

if TYPE_CHECKING:
    import numpy as np


class _Postings:
    """Per term, the rows that hold it (ascending) and how often; per row, its length."""

    def __init__(self) -> None:
        self.rows: dict[str, array] = {}
        self.counts: dict[str, array] = {}
        self.lengths = array("i")
        self.total_length = 0

    def append(self, tokens: list[str]) -> None:
        row = len(self.lengths)
        frequencies: dict[str, int] = {}
        for token in tokens:
            frequencies[token] = frequencies.get(token, 0) + 1
        for token, count in frequencies.items():
            if token not in self.rows:
                self.rows[token], self.counts[token] = array("i"), array("i")
            self.rows[token].append(row)
            self.counts[token].append(count)
        self.lengths.append(len(tokens))
        self.total_length += len(tokens)


class GrowingBM25:
    """The :class:`~localqwen.retrieval.bm25.BM25Index` interface (``size``, ``tokenizer``,
    ``scores``, ``search``) over a list of texts that :meth:`extended` appends to."""

    def __init__(self, texts: list[str], *, tokenizer: Tokenizer | None = None, k1: float = 1.2,
                 b: float = 0.75) -> None:
        self.tokenizer = tokenizer or Tokenizer()
        self.k1, self.b = k1, b
        self._postings = _Postings()
        for text in texts:
            self._postings.append(self.tokenizer(text))
        self.size = len(texts)
        self._total_length = self._postings.total_length

    def extended(self, texts: list[str]) -> GrowingBM25:
        """This index with ``texts`` appended as new rows; ``self`` stays as it was."""
        grown = object.__new__(GrowingBM25)
        grown.tokenizer, grown.k1, grown.b = self.tokenizer, self.k1, self.b
        if self.size == len(self._postings.lengths):
            grown._postings = self._postings  # the newest index: share its postings and append
        else:  # an older index extended a second time: its rows were grown on already, copy them
            grown._postings = _Postings()
            for token, rows in self._postings.rows.items():
                keep = _prefix(rows, self.size)
                if keep:
                    grown._postings.rows[token] = rows[:keep]
                    grown._postings.counts[token] = self._postings.counts[token][:keep]
            grown._postings.lengths = self._postings.lengths[: self.size]
            grown._postings.total_length = self._total_length
        for text in texts:
            grown._postings.append(self.tokenizer(text))
        grown.size = self.size + len(texts)
        grown._total_length = grown._postings.total_length
        return grown

    def scores(self, query: str) -> np.ndarray:
        """A score for every row (0 where no query word occurs)."""
        import numpy as np

        scores = np.zeros(self.size, dtype=np.float64)
        if not self.size or not self._total_length:
            return scores.astype(np.float32)
        postings = self._postings
        # copies (a slice of an array is one): a numpy view would pin the array, and another
        # thread's append to it would fail while the view lives
        lengths = np.array(postings.lengths[: self.size], dtype=np.float64)
        norm = self.k1 * (1 - self.b + self.b * lengths / (self._total_length / self.size))
        repeats: dict[str, int] = {}
        for token in self.tokenizer(query):
            repeats[token] = repeats.get(token, 0) + 1
        for token, repeat in repeats.items():
            rows = postings.rows.get(token)
            if rows is None:
                continue
            keep = _prefix(rows, self.size)
            if not keep:
                continue
            where = np.array(rows[:keep], dtype=np.int64)
            tf = np.array(postings.counts[token][:keep], dtype=np.float64)
            idf = math.log(1 + (self.size - keep + 0.5) / (keep + 0.5))
            scores[where] += repeat * idf * tf / (norm[where] + tf)
        return scores.astype(np.float32)

    def search(self, query: str, k: int = 100) -> tuple[np.ndarray, np.ndarray]:
        """(row indices, scores), best first, rows scoring 0 left out."""
        return top_scored(self.scores(query), k)


def _prefix(rows: array, size: int) -> int:
    """How many of these ascending rows are below ``size`` (the rows an index of that size holds)."""
    return len(rows) if not rows or rows[-1] < size else bisect_left(rows, size)
