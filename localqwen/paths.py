"""Where LocalQwen keeps its files.

Every path the app writes comes from here. ``LOCALQWEN_HOME`` relocates all of them at once,
which is how tests and portable installs isolate themselves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HOME_ENV = "LOCALQWEN_HOME"
APP_NAME = "localqwen"


@dataclass(frozen=True)
class AppPaths:
    config_dir: Path
    data_dir: Path
    cache_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def database_file(self) -> Path:
        return self.data_dir / "localqwen.sqlite3"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def outputs_dir(self) -> Path:
        return self.data_dir / "outputs"

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    def plugin_data_dir(self, plugin_id: str) -> Path:
        return self.data_dir / "plugins" / plugin_id

    def ensure(self) -> AppPaths:
        for directory in (self.config_dir, self.data_dir, self.cache_dir):
            directory.mkdir(parents=True, exist_ok=True)
        return self


def app_paths() -> AppPaths:
    """Resolve the directories now (not at import), honouring ``LOCALQWEN_HOME``."""
    home = os.environ.get(HOME_ENV)
    if home:
        root = Path(home).expanduser().resolve()
        return AppPaths(config_dir=root / "config", data_dir=root / "data", cache_dir=root / "cache")
    import platformdirs

    return AppPaths(
        config_dir=Path(platformdirs.user_config_dir(APP_NAME)),
        data_dir=Path(platformdirs.user_data_dir(APP_NAME)),
        cache_dir=Path(platformdirs.user_cache_dir(APP_NAME)),
    )


def resolve_inside(root: Path, untrusted: str | os.PathLike[str]) -> Path:
    """Join an untrusted relative path onto ``root``, refusing anything that escapes it.

    Absolute paths, ``..`` segments and symlinks pointing outside are all rejected.
    """
    root = Path(root).resolve()
    candidate = Path(untrusted)
    if candidate.is_absolute():
        raise PathOutsideRoot(f"absolute paths are not allowed here: {untrusted}")
    resolved = (root / candidate).resolve()
    if resolved != root and root not in resolved.parents:
        raise PathOutsideRoot(f"path escapes {root}: {untrusted}")
    return resolved


def ensure_within(roots: list[Path], path: str | os.PathLike[str]) -> Path:
    """Return ``path`` resolved, if it lies inside one of ``roots``; raise otherwise."""
    resolved = Path(path).expanduser().resolve()
    for root in roots:
        root = Path(root).expanduser().resolve()
        if resolved == root or root in resolved.parents:
            return resolved
    raise PathOutsideRoot(f"{path} is outside the allowed folders: {', '.join(str(r) for r in roots)}")


class PathOutsideRoot(ValueError):
    """An untrusted path tried to leave the folder it was confined to."""
