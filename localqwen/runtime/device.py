"""What this machine has (CUDA GPUs, Apple MPS, CPU features, RAM) and which models are loaded.

Nothing is probed at import time: the first question asked runs the probe, once. Tests hand the
manager a :class:`HostInfo` of a simulated host instead.
"""

from __future__ import annotations

import gc
import os
import platform
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.runtime.plan import GIB, ModelInfo, Plan, make_plan, next_step

if TYPE_CHECKING:
    from localqwen.runtime.engine.base import Engine


@dataclass
class CudaDevice:
    index: int
    name: str
    total_gb: float
    free_gb: float
    capability: tuple[int, int]

    @property
    def bf16(self) -> bool:
        # bf16 arrived with Ampere (compute capability 8.0).
        return self.capability >= (8, 0)

    @property
    def capability_str(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}"


@dataclass
class HostInfo:
    cpu_cores: int
    ram_total_gb: float
    ram_available_gb: float
    cpu_flags: set[str] = field(default_factory=set)
    cuda: list[CudaDevice] = field(default_factory=list)
    mps: bool = False
    llama_cpp: bool = False
    bitsandbytes: bool = False
    system: str = ""

    @property
    def avx2(self) -> bool:
        return "avx2" in self.cpu_flags

    @property
    def avx512(self) -> bool:
        return "avx512f" in self.cpu_flags

    @property
    def cpu_bf16(self) -> bool:
        """Native bf16 math on the CPU (AVX-512 BF16 or AMX-BF16); emulated bf16 is slower than fp32."""
        return bool({"avx512_bf16", "amx_bf16"} & self.cpu_flags)

    def best_cuda(self) -> CudaDevice | None:
        return max(self.cuda, key=lambda d: d.free_gb) if self.cuda else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cpu_flags"] = sorted(f for f in self.cpu_flags if f.startswith(("avx", "amx", "f16c", "fma", "neon")))
        data["cpu_bf16"] = self.cpu_bf16
        for device, raw in zip(self.cuda, data["cuda"], strict=True):
            raw["bf16"] = device.bf16
        return data


def _cpu_flags() -> set[str]:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    if platform.machine() in ("arm64", "aarch64"):
        return {"neon"}
    return set()


def _ram_gb() -> tuple[float, float]:
    try:
        import psutil

        memory = psutil.virtual_memory()
        return memory.total / GIB, memory.available / GIB
    except ImportError:  # pragma: no cover - psutil ships with our dependencies
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / GIB
        return pages, pages / 2


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def probe_host() -> HostInfo:
    """Look at the real machine (imports torch; call lazily)."""
    import torch

    total, available = _ram_gb()
    cuda: list[CudaDevice] = []
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            free, total_bytes = torch.cuda.mem_get_info(index)
            props = torch.cuda.get_device_properties(index)
            cuda.append(CudaDevice(index, props.name, total_bytes / GIB, free / GIB, (props.major, props.minor)))
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    return HostInfo(
        cpu_cores=os.cpu_count() or 1,
        ram_total_gb=total,
        ram_available_gb=available,
        cpu_flags=_cpu_flags(),
        cuda=cuda,
        mps=mps,
        llama_cpp=_installed("llama_cpp"),
        bitsandbytes=bool(cuda) and _installed("bitsandbytes"),
        system=f"{platform.system()} {platform.machine()}",
    )


def is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    name = type(error).__name__
    return name == "OutOfMemoryError" or "out of memory" in str(error).lower()


class DeviceManager:
    """Answers "how should this model run here?" and keeps one chat model loaded at a time."""

    def __init__(self, probe: Callable[[], HostInfo] = probe_host, *, prefer: str = "auto",
                 remote_url: str = "", max_loaded: int = 1) -> None:
        self._probe = probe
        self._host: HostInfo | None = None
        self.prefer = prefer
        self.remote_url = remote_url
        self.max_loaded = max_loaded
        self._lock = threading.RLock()
        self._loaded: dict[str, tuple[Engine, Plan]] = {}  # key -> (engine, plan), oldest first

    @property
    def host(self) -> HostInfo:
        with self._lock:
            if self._host is None:
                self._host = self._probe()
            return self._host

    def refresh(self) -> HostInfo:
        with self._lock:
            self._host = None
            return self.host

    def plan(self, model: ModelInfo, task: str = "text") -> Plan:
        return make_plan(self.host, model, task, prefer=self.prefer, remote_url=self.remote_url)

    # -- loaded models ---------------------------------------------------------------------
    @property
    def loaded(self) -> dict[str, Plan]:
        return {key: plan for key, (_, plan) in self._loaded.items()}

    def get(self, key: str) -> Engine | None:
        entry = self._loaded.get(key)
        return entry[0] if entry else None

    def track(self, key: str, engine: Engine, plan: Plan) -> None:
        """Record an engine loaded elsewhere (remote engines hold no local memory)."""
        with self._lock:
            self._loaded[key] = (engine, plan)

    def evict(self, key: str | None = None) -> list[str]:
        """Close one loaded engine (or all when ``key`` is None) and give the memory back."""
        with self._lock:
            keys = [key] if key is not None else list(self._loaded)
            closed = []
            for name in keys:
                entry = self._loaded.pop(name, None)
                if entry is not None:
                    entry[0].close()
                    closed.append(name)
            if closed:
                _free_memory()
            return closed

    def load(self, key: str, model: ModelInfo, task: str, loader: Callable[[Plan], Engine],
             plan: Plan | None = None) -> Engine:
        """Load through ``loader(plan)``, evicting older models first and stepping down the
        ladder (NF4 after bf16, CPU after GPU, ...) when the device runs out of memory."""
        with self._lock:
            existing = self.get(key)
            if existing is not None:
                return existing
            while len(self._loaded) >= self.max_loaded:
                self.evict(next(iter(self._loaded)))
            current = plan or self.plan(model, task)
            failures: list[str] = []
            while True:
                try:
                    engine = loader(current)
                except Exception as exc:
                    if not is_out_of_memory(exc):
                        raise
                    failures.append(f"{current.label}: {exc}")
                    _free_memory()
                    below = next_step(self.host, model, current) if current.backend != "remote" else None
                    if below is None:
                        raise MemoryError(
                            f"{model.model_id} ran out of memory on every option: " + "; ".join(failures)
                        ) from exc
                    current = below
                    continue
                engine.plan = current  # type: ignore[attr-defined]
                self._loaded[key] = (engine, current)
                return engine


def _free_memory() -> None:
    gc.collect()
    import sys

    torch = sys.modules.get("torch")  # only if already imported; never import just to clean up
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
