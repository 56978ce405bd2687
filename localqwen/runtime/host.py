"""What this machine has: CUDA GPUs, Apple MPS, CPU features and RAM.

Plain data plus one probe. Nothing is probed at import time; tests build a :class:`HostInfo`
of a simulated host instead.
"""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GIB = 1024**3


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
