"""What a plugin action gets to work with: no module-level globals, everything comes in here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.plugin_api.cancel import CancelToken

if TYPE_CHECKING:
    from localqwen.config import Config
    from localqwen.paths import AppPaths
    from localqwen.services import Services


@dataclass
class Context:
    plugin_id: str
    paths: AppPaths
    config: Config
    services: Services
    cancel: CancelToken = field(default_factory=CancelToken)

    @property
    def settings(self) -> dict[str, Any]:
        """This plugin's ``[plugins.<id>]`` config section."""
        return self.config.plugin_section(self.plugin_id)

    @property
    def data_dir(self) -> Path:
        """A folder of the plugin's own, created on first use."""
        path = self.paths.plugin_data_dir(self.plugin_id)
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def outputs_dir(self) -> Path:
        path = self.paths.outputs_dir / self.plugin_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def __getattr__(self, name: str) -> Any:
        # ctx.device, ctx.models, ctx.engine(...), ctx.database ... come from the shared services.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.services, name)
