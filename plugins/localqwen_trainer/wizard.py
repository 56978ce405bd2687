"""The trainer wizard's saved state: one JSON file per wizard, updated by each step's action.

Frontends render forms generically, so the wizard is a sequence of actions (model -> data ->
method -> hyperparameters -> run -> evaluate) over this state. Going back means running an
earlier step again (or the ``back`` action): later steps keep their values but are marked
not done, and the job config is rebuilt from whatever the state holds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_write_text

STEPS = ("model", "data", "method", "hyperparameters", "run", "evaluate")

PRESETS: dict[str, dict[str, Any]] = {
    # A quick look, a sensible default, and a longer run.
    "quick": {"epochs": 1.0, "learning_rate": 2e-4, "batch_size": 4, "gradient_accumulation": 1, "max_length": 1024},
    "balanced": {"epochs": 3.0, "learning_rate": 1e-4, "batch_size": 2, "gradient_accumulation": 4, "max_length": 2048},
    "thorough": {"epochs": 5.0, "learning_rate": 5e-5, "batch_size": 1, "gradient_accumulation": 8, "max_length": 4096},
}


@dataclass
class WizardState:
    name: str
    model: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    method: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    config_path: str | None = None
    output_dir: str | None = None

    @property
    def next_step(self) -> str | None:
        return next((s for s in STEPS if s not in self.done), None)

    def mark(self, step: str) -> None:
        """Finish ``step``; the steps after it must be reviewed again."""
        index = STEPS.index(step)
        self.done = [s for s in STEPS[:index] if s in self.done] + [step]

    def require(self, *steps: str) -> None:
        missing = [s for s in steps if s not in self.done]
        if missing:
            raise ValueError(f"wizard '{self.name}': do the step(s) {', '.join(missing)} first")

    def job_config_dict(self) -> dict[str, Any]:
        self.require("model", "data", "method")
        data = {k: v for k, v in self.data.items() if k in ("train", "eval", "source", "eval_fraction")}
        return {
            "name": self.name,
            "output_dir": self.output_dir,
            "model": {k: v for k, v in self.model.items() if k in ("path", "task")},
            "data": data,
            "method": {"name": self.method["name"], "options": self.method.get("options", {})},
            "training": {"objective": self.method.get("objective", "sft"), **self.training},
        }

    def rows(self) -> list[list[Any]]:
        """A table of the state for the status view."""
        out = []
        for step in STEPS:
            values = {"model": self.model, "data": self.data, "method": self.method,
                      "hyperparameters": self.training}.get(step, {})
            detail = ", ".join(f"{k}={v}" for k, v in values.items() if k != "preview")
            out.append([step, "done" if step in self.done else "", detail[:120]])
        return out


class WizardStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, name: str) -> Path:
        safe = "".join(c for c in name if c.isalnum() or c in "-_") or "default"
        return self.folder / f"{safe}.json"

    def load(self, name: str) -> WizardState:
        path = self.path(name)
        if not path.exists():
            return WizardState(name=name)
        return WizardState(**json.loads(path.read_text(encoding="utf-8")))

    def save(self, state: WizardState) -> None:
        atomic_write_text(self.path(state.name), json.dumps(asdict(state), indent=2, ensure_ascii=False))
