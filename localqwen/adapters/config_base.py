"""Options every adapter method shares: its target layers, and rank and scaling for the low-rank ones."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from localqwen.adapters.errors import AdapterError

# Qwen3 / Qwen3-VL text decoder attention projections (the seed's LoRA targets).
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_TARGETS = ("gate_proj", "up_proj", "down_proj")

ConfigT = TypeVar("ConfigT", bound="TargetConfig")


@dataclass
class TargetConfig:
    """Which linear layers get an adapter (all a method like IA3 needs).

    ``target_modules`` are matched like PEFT: a name matches a module whose dotted path equals it or
    ends with ``.<name>``. The vision tower (``visual.*`` in Qwen3-VL) is skipped unless
    ``include_vision`` is set, so the same short names never reach into it by accident.
    """

    target_modules: list[str] = field(default_factory=lambda: list(DEFAULT_TARGETS))
    include_vision: bool = False

    def validate(self) -> None:
        _require(
            bool(self.target_modules) and all(isinstance(t, str) and t for t in self.target_modules),
            f"target_modules must be a non-empty list of module names, got {self.target_modules!r}",
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls: type[ConfigT], values: dict[str, Any]) -> ConfigT:
        """Build and validate; unknown keys are an error that lists the known ones."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise AdapterError(f"unknown {cls.__name__} option(s) {unknown}; known: {sorted(known)}")
        config = cls(**values)
        if isinstance(config.target_modules, str):
            config.target_modules = [config.target_modules]
        config.target_modules = list(config.target_modules)
        config.validate()
        return config


@dataclass
class LowRankConfig(TargetConfig):
    """Targets plus rank and scaling (LoRA, DoRA and the low-rank methods we implement)."""

    r: int = 8
    alpha: float = 16.0
    dropout: float = 0.0

    @property
    def scaling(self) -> float:
        return self.alpha / self.r

    def validate(self) -> None:
        _require(isinstance(self.r, int) and self.r >= 1, f"r must be a positive integer, got {self.r!r}")
        _require(self.alpha > 0, f"alpha must be > 0, got {self.alpha!r}")
        _require(0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout!r}")
        super().validate()


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AdapterError(message)
