"""How a model should run on a host: backend, device, dtype, quantization, memory, and why.

Pure functions over a :class:`~localqwen.runtime.host.HostInfo` and a model description, so
every host (8 GB card, old GPU, low-RAM laptop, Mac) can be tested without the hardware.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from localqwen.runtime.host import GIB, HostInfo

# Bytes per parameter for each way of holding weights (nf4: 4-bit weights plus their
# double-quantized scales). The training memory estimate reads the same table.
BYTES_PER_PARAM = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0, "nf4": 0.56, "Q4_K_M": 0.60, "Q8_0": 1.07}
# Working memory on top of weights: activations, KV cache for a few thousand tokens, runtime.
OVERHEAD_FRACTION = 0.20
OVERHEAD_FIXED_GB = 0.5
# Leave this much of system RAM to the OS and the rest of the app.
RAM_RESERVE_GB = 2.0
# Apple GPUs share system memory; MPS can use about this share of what is free.
MPS_SHARE = 0.75


@dataclass
class ModelInfo:
    """What planning needs to know about a model (from the catalog or a local folder)."""

    model_id: str
    params_b: float  # parameters, billions
    vision: bool = False
    gguf_quants: list[str] = field(default_factory=list)  # GGUF variants we can run, best first
    smaller: str = ""  # a catalog id to suggest when this does not fit
    kind: str = "chat"  # chat | embedding | reranker
    transformers: bool = True  # False for GGUF-only models (llama.cpp is the only way to run them)


@dataclass
class Plan:
    model_id: str
    task: str
    backend: str  # transformers | llama.cpp | remote
    device: str  # cuda | mps | cpu | remote
    dtype: str | None  # float32 | bfloat16 | float16; None for GGUF
    quantization: str | None  # nf4 | Q4_K_M | Q8_0 | None
    estimated_gb: float
    available_gb: float
    fits: bool
    reasons: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    compute_dtype: str | None = None  # bnb 4-bit compute dtype

    @property
    def label(self) -> str:
        how = self.quantization or self.dtype or "server"
        return f"{self.backend} on {self.device} ({how})"

    def explain(self) -> str:
        lines = [f"{self.model_id} for {self.task}: {self.label}, about {self.estimated_gb:.1f} GB"
                 f" of {self.available_gb:.1f} GB available"]
        lines += [f"  - {reason}" for reason in self.reasons]
        if not self.fits:
            lines.append("  ! will not fit on this machine")
        lines += [f"  > {tip}" for tip in self.advice]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "model_id": self.model_id,
            "task": self.task,
            "backend": self.backend,
            "device": self.device,
            "dtype": self.dtype,
            "quantization": self.quantization,
            "compute_dtype": self.compute_dtype,
            "estimated_gb": round(self.estimated_gb, 2),
            "available_gb": round(self.available_gb, 2),
            "fits": self.fits,
            "reasons": list(self.reasons),
            "advice": list(self.advice),
        }


def estimate_gb(params_b: float, how: str) -> float:
    weights = params_b * 1e9 * BYTES_PER_PARAM.get(how, BYTES_PER_PARAM["Q4_K_M"]) / GIB
    return weights * (1 + OVERHEAD_FRACTION) + OVERHEAD_FIXED_GB


def usable_ram_gb(host: HostInfo) -> float:
    """System RAM a model may take: what is free, less what the OS and the rest of the app keep."""
    return max(host.ram_available_gb - RAM_RESERVE_GB, 0.0)


def ladder(host: HostInfo, model: ModelInfo, task: str = "text", *, prefer: str = "auto") -> list[Plan]:
    """Every way to run ``model`` on ``host``, best first. The first that fits is the plan; on
    out-of-memory the loader steps to the next one."""
    steps: list[Plan] = []
    ram = usable_ram_gb(host)

    def add(backend: str, device: str, dtype: str | None, quant: str | None, available: float,
            reasons: list[str], compute: str | None = None) -> None:
        how = quant or dtype or "float32"
        need = estimate_gb(model.params_b, how)
        steps.append(Plan(model.model_id, task, backend, device, dtype, quant, need, available,
                          need <= available, list(reasons), compute_dtype=compute))

    cuda = host.best_cuda() if prefer in ("auto", "cuda") and model.transformers else None
    if cuda is not None:
        half = "bfloat16" if cuda.bf16 else "float16"
        why_half = (f"{cuda.name} supports bf16" if cuda.bf16
                    else f"{cuda.name} (compute {cuda.capability_str}) has no bf16, so float16")
        free = cuda.free_gb
        add("transformers", "cuda", half, None, free, [why_half, "full half precision: best quality and speed"])
        if model.kind == "chat" and not host.bitsandbytes:
            steps[-1].advice.append("install bitsandbytes (pip install 'localqwen[gpu]') to run 4-bit NF4 on the GPU")
        if model.kind == "chat" and host.bitsandbytes:
            add("transformers", "cuda", half, "nf4", free,
                [f"bitsandbytes 4-bit NF4 with double quantization and {half} compute", why_half],
                compute=half)
    if host.mps and prefer in ("auto", "mps") and model.transformers:
        add("transformers", "mps", "float16", None, host.ram_available_gb * MPS_SHARE,
            ["Apple GPU (MPS) shares system memory; float16 weights"])
    # CPU: GGUF through llama.cpp is the fast path; transformers fp32/bf16 otherwise.
    if model.gguf_quants and host.llama_cpp and model.kind == "chat":
        for quant in model.gguf_quants:
            add("llama.cpp", "cpu", None, quant, ram,
                [f"GGUF {quant} through llama.cpp: the fastest way to run on CPU",
                 f"{host.cpu_cores} CPU cores" + (", AVX-512" if host.avx512 else ", AVX2" if host.avx2 else "")])
    if not model.transformers:
        if not steps:
            add("llama.cpp", "cpu", None, model.gguf_quants[0] if model.gguf_quants else "Q4_K_M", ram,
                ["a GGUF-only model runs through llama.cpp"])
            steps[-1].advice.append("install llama-cpp-python (pip install 'localqwen[llama]')")
            steps[-1].fits = False
        return steps
    cpu_dtype = "bfloat16" if host.cpu_bf16 else "float32"
    why_cpu = ("the CPU has native bf16 (AVX-512 BF16 / AMX)" if host.cpu_bf16
               else "the CPU has no native bf16, so float32")
    add("transformers", "cpu", cpu_dtype, None, ram, [why_cpu])
    if cpu_dtype == "bfloat16":
        add("transformers", "cpu", "float32", None, ram, ["float32 fallback"])
    if model.gguf_quants and not host.llama_cpp and model.kind == "chat":
        steps[-1].advice.append("install llama-cpp-python (pip install 'localqwen[llama]') for fast GGUF on CPU")
    return steps


def make_plan(host: HostInfo, model: ModelInfo, task: str = "text", *, prefer: str = "auto",
              remote_url: str = "") -> Plan:
    """The plan for ``model``: the best rung that fits, or the smallest one with advice."""
    if remote_url and model.kind == "chat":
        return Plan(model.model_id, task, "remote", "remote", None, None, 0.0, 0.0, True,
                    [f"runtime.remote_url is set: the model runs on {remote_url}"])
    if task == "vision" and not model.vision:
        raise ValueError(f"{model.model_id} is a text model; vision tasks need a Qwen3-VL model")
    steps = ladder(host, model, task, prefer=prefer)
    for step in steps:
        if step.fits:
            others = [s for s in steps if s is not step]
            if others and step is not steps[0]:
                step.reasons.append(f"better options need more memory than is available "
                                    f"({steps[0].label} needs {steps[0].estimated_gb:.1f} GB)")
            return step
    smallest = min(steps, key=lambda s: s.estimated_gb)
    advice = list(smallest.advice)
    if model.smaller:
        advice.append(f"try the smaller {model.smaller}")
    lower = [q for q in ("Q4_K_M", "Q3_K_M", "Q2_K") if q not in (smallest.quantization or "")]
    if model.kind == "chat":
        advice.append(f"or a lower-bit GGUF ({', '.join(lower[:2])}) through llama.cpp")
    advice.append(f"needs about {smallest.estimated_gb:.1f} GB; {smallest.available_gb:.1f} GB is available")
    return replace(smallest, fits=False, advice=advice)


def next_step(host: HostInfo, model: ModelInfo, current: Plan) -> Plan | None:
    """The rung below ``current`` (used after an out-of-memory error), or None at the bottom."""
    steps = ladder(host, model, current.task)
    keys = [(s.backend, s.device, s.dtype, s.quantization) for s in steps]
    key = (current.backend, current.device, current.dtype, current.quantization)
    if key not in keys:
        return steps[-1] if steps else None
    index = keys.index(key)
    if index + 1 < len(steps):
        below = steps[index + 1]
        below.reasons.insert(0, f"stepped down after running out of memory with {current.label}")
        return below
    return None
