"""Dataset generators ("data sources") a job or the trainer wizard can build its train file with.

A data source is ``builder(out_dir, **options) -> path of the train file``. There is no registry in
this module: whoever builds data passes the mapping name -> :class:`DataSource` to use. In the app
that mapping is ``Workbench.extensions.data_sources``: the built-ins below plus what each plugin
adds with ``extensions.add_data_source`` in its ``register`` hook. Code with no workbench (tests,
the shapes proof) passes :func:`builtin_data_sources`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Builder = Callable[..., Path]


@dataclass(frozen=True)
class DataSource:
    name: str
    title: str
    builder: Builder
    plugin_id: str = ""  # the plugin that registered it; "" for LocalQwen's own


DataSources = Mapping[str, DataSource]


def builtin_data_sources() -> dict[str, DataSource]:
    """The generators LocalQwen ships itself (a fresh dict: callers may add to it)."""
    from localqwen.training.synthetic_shapes import data_source_builder

    return {"synthetic-shapes": DataSource("synthetic-shapes", "Synthetic coloured shapes (image captions)",
                                           data_source_builder)}


def build_data_source(sources: DataSources, name: str, out_dir: str | Path, **options: Any) -> Path:
    """Run the source called ``name`` from ``sources`` into ``out_dir``; returns the train file."""
    if name not in sources:
        known = ", ".join(sorted(sources)) or "none"
        raise KeyError(f"unknown data source '{name}' (registered: {known}); a plugin's source is known only "
                       "when that plugin is installed and loads (see `localqwen plugins`)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = Path(sources[name].builder(out, **options))
    if not path.exists():
        raise RuntimeError(f"data source '{name}' did not write its dataset (expected {path})")
    return path
