"""The trainer wizard's saved state: one JSON file per named setup, updated by each step's action.

The steps are actions (model -> data -> method -> hyperparameters -> run -> evaluate) over this
state, so the CLI runs them one by one and the TUI/web wizard walks through them (wizard.py).
Each step keeps the form values it was run with, so a frontend coming back to a step shows them.
Running a step again keeps the other steps' marks unless its result changed: then the steps built
from it (the job config, the run, the evaluation) must be done again; the choices made in the
other steps stay done.

Two windows may work on one setup at once (the TUI and the web wizard, a CLI step beside them), and
a step may run for an hour (training). So a step's save is merged into the setup as it is on disk
then, under a lock: what the step changed goes in, what others saved meanwhile stays; and a step
whose earlier steps were changed while it ran (its result rests on what is no longer chosen) is
refused, with nothing of it saved (:class:`WizardChanged`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_write_text
from localqwen.storage.file_lock import FileLock

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
    # The saved fields as WizardStore.load() read them, which its save() merges against (None for a
    # state never loaded: saved as it is). Not itself saved.
    as_loaded: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def saved_fields(self) -> dict[str, Any]:
        """The fields the setup's file holds (a deep copy; ``as_loaded`` is left out, not copied)."""
        return {name: copy.deepcopy(getattr(self, name)) for name in SAVED_FIELDS}

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


SAVED_FIELDS = tuple(f.name for f in fields(WizardState) if f.name != "as_loaded")


class WizardStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, name: str) -> Path:
        safe = "".join(c for c in name if c.isalnum() or c in "-_") or "default"
        return self.folder / f"{safe}.json"

    def load(self, name: str) -> WizardState:
        path = self.path(name)
        state = WizardState(name=name)
        if path.exists():
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(saved, dict):
                    raise ValueError(f"a JSON object was expected, not {type(saved).__name__}")
            except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                raise ValueError(f"wizard setup '{name}' ({path}) cannot be read: {exc}; fix the file, or "
                                 "delete it to start this setup again") from None
            state = WizardState(**{k: v for k, v in saved.items() if k in SAVED_FIELDS})
        state.as_loaded = state.saved_fields()  # what save() merges against
        return state

    def save(self, state: WizardState, step: str | None = None) -> None:
        """Write what changed in ``state`` since it was loaded into the setup as it is on disk now.
        With ``step``, refused (:class:`WizardChanged`, nothing written) when a step before it was
        changed or undone on disk since ``state`` was loaded."""
        path = self.path(state.name)
        with FileLock(path.with_name(path.name + ".lock")):
            loaded = state.as_loaded
            mine = state.saved_fields()
            if loaded is not None:
                latest = self.load(state.name).saved_fields()
                if latest != loaded:
                    moved = [s for s in (STEPS[:STEPS.index(step)] if step else ())
                             if _step_choice(latest, s) != _step_choice(loaded, s)]
                    if moved:
                        raise WizardChanged(
                            f"setup '{state.name}': step {moved[0]} was changed elsewhere (another window?) "
                            f"while {step} ran, so {step} was not saved; run it again")
                    mine = _merged(loaded, mine, latest)
            atomic_write_text(path, json.dumps(mine, indent=2, ensure_ascii=False))
        for key, value in mine.items():
            setattr(state, key, copy.deepcopy(value))
        state.as_loaded = copy.deepcopy(mine)

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json")) if self.folder.is_dir() else []


class WizardChanged(ValueError):
    """A step's save refused: a step it builds on was changed elsewhere while it ran."""


def _step_choice(state: dict[str, Any], step: str) -> tuple[Any, Any, bool]:
    """What a later step builds on from ``step``: its form values, its result and whether it is done."""
    forms = state["forms"]
    return forms.get(step), forms.get(f"{step}_result"), step in state["done"]


def _merged(loaded: dict[str, Any], mine: dict[str, Any], latest: dict[str, Any]) -> dict[str, Any]:
    """``latest`` with what changed from ``loaded`` to ``mine``: each field, each form, each mark."""
    out = copy.deepcopy(latest)
    for key, value in mine.items():
        if key == "forms":
            out["forms"].update({k: v for k, v in value.items() if loaded["forms"].get(k) != v})
        elif key == "done":
            added, removed = set(value) - set(loaded["done"]), set(loaded["done"]) - set(value)
            out["done"] = [s for s in STEPS if (s in latest["done"] or s in added) and s not in removed]
        elif value != loaded.get(key):
            out[key] = copy.deepcopy(value)
    return out
