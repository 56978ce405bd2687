"""The trainer wizard's saved state: one JSON file per named setup, updated by each step's action.

The steps are actions (model -> data -> method -> hyperparameters -> run -> evaluate) over this
state, so the CLI runs them one by one and the TUI/web wizard walks through them (wizard.py).
Each step keeps the form values it was run with, so a frontend coming back to a step shows them.
Running a step again keeps the other steps' marks unless its result changed: then the steps built
from it (the job config, the run, the evaluation) must be done again; the choices made in the
other steps stay done.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_write_text

STEPS = ("model", "data", "method", "hyperparameters", "run", "evaluate")
# Steps whose result is built from the earlier ones: the job config, the trained model, its scores.
DERIVED = ("hyperparameters", "run", "evaluate")


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
    forms: dict[str, dict[str, Any]] = field(default_factory=dict)  # step -> the form values it last ran with

    @property
    def next_step(self) -> str | None:
        return next((s for s in STEPS if s not in self.done), None)

    def mark(self, step: str, *, changed: bool = True) -> None:
        """Finish ``step``. When its result ``changed``, the derived steps after it are undone."""
        index = STEPS.index(step)
        undone = {s for s in DERIVED if STEPS.index(s) > index} if changed else set()
        self.done = [s for s in STEPS if (s in self.done or s == step) and s not in undone]

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
        saved = json.loads(path.read_text(encoding="utf-8"))
        known = WizardState.__dataclass_fields__
        return WizardState(**{k: v for k, v in saved.items() if k in known})

    def save(self, state: WizardState) -> None:
        atomic_write_text(self.path(state.name), json.dumps(asdict(state), indent=2, ensure_ascii=False))

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json")) if self.folder.is_dir() else []
