"""Shared helpers for the RAG benchmarks: the real IR sets (read in place) and cached embeddings.

Encoding SciFact + NFCorpus with MiniLM on a small CPU takes minutes, so document vectors are
cached under the app cache dir (never in the repository), keyed by dataset, model and text hash.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from localqwen.paths import app_paths  # noqa: E402
from localqwen.retrieval.evaluation import IRDataset, load_nfcorpus, load_scifact  # noqa: E402

DATA_DIR = Path(os.environ.get("LOCALQWEN_BENCH_DATA", ROOT.parent / "shared" / "data"))
LOADERS = {"scifact": load_scifact, "nfcorpus": load_nfcorpus}


TUNING_SPLIT = {"scifact": "train", "nfcorpus": "dev"}  # judgments used to pick fusion settings


def load_dataset(name: str, split: str = "test") -> IRDataset:
    return LOADERS[name](DATA_DIR / name, split)


def cache_dir() -> Path:
    path = app_paths().cache_dir / "bench_rag"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cached_vectors(texts: list[str], model: str | None, label: str):
    """Encode ``texts`` once and keep the matrix in the app cache dir."""
    import numpy as np

    from localqwen.retrieval.embeddings import get_embedder

    embedder = get_embedder(model)
    digest = hashlib.sha256(("\x00".join(texts) + "|" + embedder.path).encode()).hexdigest()[:16]
    path = cache_dir() / f"{label}-{digest}.npy"
    if path.exists():
        return np.load(path)
    start = time.perf_counter()
    vectors = embedder.encode(texts, batch_size=32)
    print(f"   encoded {len(texts)} texts for {label} in {time.perf_counter() - start:.0f} s "
          f"(cached at {path})", flush=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    os.replace(tmp, path)
    return vectors


if __name__ == "__main__":  # warm the cache
    for name in sys.argv[1:] or list(LOADERS):
        data = load_dataset(name)
        cached_vectors(data.doc_texts, None, f"{name}-docs")
        cached_vectors([data.queries[q] for q in data.queries], None, f"{name}-queries")
