"""Which models are loaded, and how a model should run on this machine (see host.py, plan.py).

Nothing is probed at import time: the first question asked runs the probe, once. Tests hand the
manager a :class:`HostInfo` of a simulated host instead.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from localqwen.runtime.host import HostInfo, probe_host
from localqwen.runtime.plan import ModelInfo, Plan, make_plan, next_step

if TYPE_CHECKING:
    from localqwen.runtime.engine.base import Engine


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
        # Embedding and reranker models: small, shared by every knowledge base, kept beside the engine.
        self._auxiliary: dict[str, tuple[Any, float]] = {}  # key -> (model, GB of weights)

    def configure(self, *, prefer: str, remote_url: str) -> None:
        """Take new ``[runtime]`` settings (the config owner calls this when the file changes)."""
        with self._lock:
            self.prefer = prefer
            self.remote_url = remote_url

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

    def auxiliary(self, key: str, loader: Callable[[], Any]) -> Any:
        """A shared helper model (embedder, reranker): loaded once, counted in ``memory_gb``, and
        dropped by :meth:`evict` like an engine."""
        with self._lock:
            entry = self._auxiliary.get(key)
            if entry is None:
                model = loader()
                entry = (model, _weights_gb(model))
                self._auxiliary[key] = entry
            return entry[0]

    @property
    def memory_gb(self) -> dict[str, float]:
        """Estimated memory held per loaded model: engines by their plan, helpers by their weights."""
        held = {key: plan.estimated_gb for key, (_, plan) in self._loaded.items()}
        held.update({key: size for key, (_, size) in self._auxiliary.items()})
        return held

    def evict(self, key: str | None = None) -> list[str]:
        """Close one loaded model (or all when ``key`` is None) and give the memory back."""
        with self._lock:
            keys = [key] if key is not None else [*self._loaded, *self._auxiliary]
            closed = []
            for name in keys:
                entry = self._loaded.pop(name, None)
                if entry is not None:
                    entry[0].close()
                    closed.append(name)
                if self._auxiliary.pop(name, None) is not None:
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


def _weights_gb(model: Any) -> float:
    """Bytes of a helper model's torch parameters, in GB (0 when it holds none we can see); a
    model that is not torch's (an ONNX file) may say its own size as ``weights_bytes``."""
    if isinstance(getattr(model, "weights_bytes", None), int):
        return int(model.weights_bytes) / 1024**3
    inner = getattr(model, "model", model)
    parameters = getattr(inner, "parameters", None)
    if parameters is None:
        return 0.0
    try:
        return sum(p.numel() * p.element_size() for p in parameters()) / 1024**3
    except Exception:  # an object whose parameters() is not torch's
        return 0.0


def _free_memory() -> None:
    gc.collect()
    import sys

    torch = sys.modules.get("torch")  # only if already imported; never import just to clean up
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
