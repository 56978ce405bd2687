"""Which folders the web view reads and serves: Gradio's upload cache and the app's own outputs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localqwen.paths import AppPaths


def gradio_temp_dir(paths: AppPaths) -> Path:
    return paths.cache_dir / "gradio"


def prepare_environment(paths: AppPaths) -> None:
    """Point Gradio's upload/cache folder at the app's cache, and keep Gradio offline and quiet."""
    folder = gradio_temp_dir(paths)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def allowed_paths(paths: AppPaths) -> list[Path]:
    """The only folders whose files the web view may serve: what the app wrote or was given."""
    for folder in (paths.outputs_dir, paths.uploads_dir):
        folder.mkdir(parents=True, exist_ok=True)
    return [paths.outputs_dir, paths.uploads_dir]
