"""Token-level matching ("late interaction", as ColBERT scores a document): each topic word of the
query finds its most similar token in a text, and the text scores the mean of those best cosines.

A sentence vector averages a text into one point, so a question about "hobbies" and a turn about
"kayaking and skiing" can sit far apart; matched word by word with the same model's contextual
token vectors, "hobbies" finds "kayaking". On LoCoMo this lifted the memory chat's all@10 by 2.5
points and its multi-hop all@10 by 4.2 (README, "Memory chat"). The token vectors come from the
same forward pass as the sentence vector (no extra model), and are stored as int8 with a scale per
token, which measured the same as float32 there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from localqwen.retrieval.bm25 import STOPWORDS

if TYPE_CHECKING:
    import numpy as np


def content_mask(pieces: list[str]) -> np.ndarray:
    """Which of a query's word pieces carry its topic: words that are not stop words or punctuation,
    and the continuations (``##ing``) of any word. A question's "what", "did" and "?" would
    otherwise match every text alike."""
    import numpy as np

    words = [piece.lstrip("\u2581\u0120") for piece in pieces]  # SentencePiece's and GPT-2's word-start marks
    keep = [piece.startswith("##") or (word.isalnum() and word.lower() not in STOPWORDS)
            for piece, word in zip(pieces, words, strict=True)]
    return np.array(keep, dtype=bool)


def normalised(tokens: np.ndarray) -> np.ndarray:
    import numpy as np

    tokens = np.asarray(tokens, dtype=np.float32)
    return tokens / np.maximum(np.linalg.norm(tokens, axis=1, keepdims=True), 1e-12)


def quantize(tokens: np.ndarray) -> tuple[bytes, bytes]:
    """Token vectors as int8 bytes and one float32 scale per token (a quarter of float32's size)."""
    import numpy as np

    tokens = np.asarray(tokens, dtype=np.float32)
    scales = np.maximum(np.abs(tokens).max(axis=1, initial=0.0), 1e-12) / 127.0
    values = np.round(tokens / scales[:, None]).astype(np.int8)
    return values.tobytes(), scales.astype(np.float32).tobytes()


def dequantize(values: bytes, scales: bytes, dimension: int) -> np.ndarray:
    import numpy as np

    scale = np.frombuffer(scales, dtype=np.float32)
    return np.frombuffer(values, dtype=np.int8).reshape(len(scale), dimension).astype(np.float32) * scale[:, None]
