"""Optional second stage: a sentence-transformers CrossEncoder re-scores the fused candidates.

Any local folder or hub id works (e.g. ``BAAI/bge-reranker-base``); nothing ships offline, so the
default is "no rerank" and tests build a tiny cross-encoder at test time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

RERANKER_CATALOG = {
    "BAAI/bge-reranker-base": "multilingual (zh/en), 278M params",
    "BAAI/bge-reranker-v2-m3": "multilingual, 568M params",
    "cross-encoder/ms-marco-MiniLM-L-6-v2": "English, 22M params, fast",
}

if TYPE_CHECKING:
    from localqwen.runtime.device import DeviceManager


class Reranker:
    def __init__(self, name: str, device: str | None = None, max_length: int = 512) -> None:
        from localqwen.retrieval.quiet import quiet_loading
        from localqwen.runtime.model_files import check_no_pickle_only

        path = Path(name).expanduser()
        self.name = str(path.resolve()) if path.exists() else name
        check_no_pickle_only(path)  # safetensors only, as for every model LocalQwen loads
        with quiet_loading():
            from sentence_transformers import CrossEncoder

            self.model = CrossEncoder(self.name, device=device or "cpu", max_length=max_length,
                                      model_kwargs={"use_safetensors": True})

    def scores(self, query: str, texts: list[str], batch_size: int = 32) -> list[float]:
        if not texts:
            return []
        raw = self.model.predict([(query, text) for text in texts], batch_size=batch_size,
                                 show_progress_bar=False, convert_to_numpy=True)
        return [float(x) for x in raw.reshape(len(texts), -1)[:, -1]]


def get_reranker(name: str, device: str | None = None, *, manager: DeviceManager | None = None) -> Reranker:
    """A cross-encoder; with the device ``manager`` it is loaded once and shared (see get_embedder)."""
    if manager is None:
        return Reranker(name, device)
    return manager.auxiliary(f"reranker|{name}|{device or 'cpu'}", lambda: Reranker(name, device))  # type: ignore[no-any-return]
