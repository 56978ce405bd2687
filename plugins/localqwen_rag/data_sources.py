"""Router training data as trainer data sources: ``rag-router-sft`` and ``rag-router-dpo`` build
their files from this machine's trajectory logs (see trajectory.export_router_data)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localqwen.plugin_api import Extensions


def trajectories_dir() -> Path:
    from localqwen.paths import app_paths

    return app_paths().plugin_data_dir("rag") / "trajectories"


def _build(out_dir: Path, kind: str, trajectories: str | None = None) -> Path:
    from localqwen_rag.trajectory import TrajectoryLog, export_router_data

    records = TrajectoryLog(Path(trajectories) if trajectories else trajectories_dir()).read()
    return Path(export_router_data(records, Path(out_dir))[kind])


def build_router_sft(out_dir: Path, trajectories: str | None = None) -> Path:
    return _build(out_dir, "sft", trajectories)


def build_router_dpo(out_dir: Path, trajectories: str | None = None) -> Path:
    return _build(out_dir, "dpo", trajectories)


def register(extensions: Extensions) -> None:
    """Make the router data known to the trainer (called by the plugin's ``register`` hook)."""
    extensions.add_data_source("rag-router-sft", "RAG meta-router SFT (query -> topology plan) from trajectories",
                               build_router_sft)
    extensions.add_data_source("rag-router-dpo", "RAG meta-router DPO (simplest successful topology preferred)",
                               build_router_dpo)
