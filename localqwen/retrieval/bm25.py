"""Keyword search with BM25.

``bm25s`` is the default backend: it precomputes a sparse term-document score matrix, so a query
costs a few sparse column sums instead of rank-bm25's Python loop over every document (see the
README's benchmark for the numbers). ``rank-bm25`` stays available for comparison. Both use the
same tokenizer, so they score identically up to the BM25 variant.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# A short English stop list: the words that carry no topic.
STOPWORDS = frozenset(["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves"])

_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+|[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _stemmer():
    try:
        import Stemmer  # PyStemmer (optional): Snowball English stemmer in C
    except ImportError:
        return None
    return Stemmer.Stemmer("english")


class Tokenizer:
    """Lower-case words minus stop words (optionally stemmed); CJK runs become character bigrams,
    since Chinese / Japanese have no spaces between words."""

    def __init__(self, *, stem: bool = True) -> None:
        self._stemmer = _stemmer() if stem else None
        self._cache: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        tokens: list[str] = []
        for match in _TOKEN.finditer(text.lower()):
            word = match.group()
            if _CJK.match(word):
                tokens.extend(word if len(word) == 1 else [word[i:i + 2] for i in range(len(word) - 1)])
            elif word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
                tokens.append(self._stem(word))
        return tokens

    def _stem(self, word: str) -> str:
        if self._stemmer is None:
            return word
        stemmed = self._cache.get(word)
        if stemmed is None:
            stemmed = self._cache[word] = self._stemmer.stemWord(word)
        return stemmed


class MemoizingTokenizer(Tokenizer):
    """A :class:`Tokenizer` that keeps each text's tokens, for an index rebuilt often over mostly the
    same documents (the memory store rebuilds a persona's after a forget, an edit or a consolidation;
    tokenizing was 80% of such a rebuild). Forgets everything past ``limit`` texts, so memory stays bounded."""

    def __init__(self, *, stem: bool = True, limit: int = 200_000) -> None:
        super().__init__(stem=stem)
        self._texts: dict[str, list[str]] = {}
        self._limit = limit

    def __call__(self, text: str) -> list[str]:
        tokens = self._texts.get(text)
        if tokens is None:
            if len(self._texts) >= self._limit:
                self._texts.clear()
            tokens = self._texts[text] = super().__call__(text)
        return list(tokens)  # a copy: the kept list must not change under a caller


class BM25Index:
    """BM25 over a fixed list of texts; ``search`` returns (row indices, scores), best first."""

    def __init__(self, texts: list[str], *, backend: str = "bm25s", tokenizer: Tokenizer | None = None,
                 k1: float = 1.2, b: float = 0.75) -> None:
        self.backend = backend
        self.tokenizer = tokenizer or Tokenizer()
        self.size = len(texts)
        corpus = [self.tokenizer(text) for text in texts]
        self._index = None
        if backend not in ("bm25s", "rank_bm25"):
            raise ValueError(f"unknown BM25 backend '{backend}' (bm25s or rank_bm25)")
        if not any(corpus):
            return  # nothing to match (empty knowledge base, or only stop words): every score is 0
        if backend == "bm25s":
            import bm25s

            self._index = bm25s.BM25(k1=k1, b=b, method="lucene")
            self._index.index(corpus or [[]], show_progress=False)
        elif backend == "rank_bm25":
            from rank_bm25 import BM25Okapi

            # rank-bm25 divides by zero on an empty corpus; one empty document keeps it defined.
            self._index = BM25Okapi([doc or [""] for doc in corpus], k1=k1, b=b)

    def scores(self, query: str) -> np.ndarray:
        """A score for every row (0 where no query term occurs)."""
        import numpy as np

        tokens = self.tokenizer(query)
        if not tokens or self._index is None:
            return np.zeros(self.size, dtype=np.float32)
        raw = self._index.get_scores(tokens)
        return np.asarray(raw, dtype=np.float32)[: self.size]

    def search(self, query: str, k: int = 100) -> tuple[np.ndarray, np.ndarray]:
        return top_scored(self.scores(query), k)


def top_scored(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows (row indices, scores), best first, rows scoring 0 left out."""
    import numpy as np

    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    top = top[scores[top] > 0]
    return top, scores[top]
