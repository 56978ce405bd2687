"""Registered dataset generators ("data sources") that the trainer wizard and job configs can use.

A plugin registers one with ``register_data_source(name, title, builder)``; ``builder(out_dir,
**options)`` writes a dataset file into ``out_dir`` and returns its path. So that a bare
``localqwen train`` (which loads no plugin) also knows them, a package names its ``register()``
function in the ``localqwen.data_sources`` entry-point group; those are loaded on first lookup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Builder = Callable[..., Path]


@dataclass(frozen=True)
class DataSource:
    name: str
    title: str
    builder: Builder


_SOURCES: dict[str, DataSource] = {}


def register_data_source(name: str, title: str, builder: Builder) -> None:
    """Add (or replace) a data source. Names are short ids like ``synthetic-shapes``."""
    if not name or not callable(builder):
        raise ValueError("a data source needs a name and a callable builder(out_dir, **options) -> Path")
    _SOURCES[name] = DataSource(name, title, builder)


ENTRY_POINT_GROUP = "localqwen.data_sources"
_loaded_entry_points: set[str] = set()
failures: dict[str, str] = {}


def _register_builtins() -> None:
    if "synthetic-shapes" not in _SOURCES:
        from localqwen.training.synthetic_shapes import data_source_builder

        register_data_source("synthetic-shapes", "Synthetic coloured shapes (image captions)", data_source_builder)
    load_plugin_extensions()


def load_plugin_extensions() -> None:
    """Run each installed package's training ``register()`` (data sources, task metrics), once."""
    from importlib import metadata

    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _loaded_entry_points:
            continue
        _loaded_entry_points.add(ep.name)
        try:
            ep.load()()
        except Exception as exc:  # one broken package must not hide the other sources
            failures[ep.name] = f"{type(exc).__name__}: {exc}"


def list_data_sources() -> list[DataSource]:
    _register_builtins()
    return sorted(_SOURCES.values(), key=lambda s: s.name)


def build_data_source(name: str, out_dir: str | Path, **options: Any) -> Path:
    _register_builtins()
    if name not in _SOURCES:
        known = ", ".join(sorted(_SOURCES)) or "none"
        raise KeyError(f"unknown data source '{name}' (registered: {known})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = Path(_SOURCES[name].builder(out, **options))
    if not path.exists():
        raise RuntimeError(f"data source '{name}' did not write its dataset (expected {path})")
    return path
