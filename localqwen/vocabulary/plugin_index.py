"""Which plugins this environment offers, from entry-point metadata alone.

Nothing here imports a plugin, pydantic or the plugin API, so a frontend can list the plugins in
its first frame and load them afterwards (the TUI home screen does). The environment switches
are the plugin host's (``localqwen.plugin_api.host``):

- ``LOCALQWEN_PLUGINS=captioner,rag`` offers only these plugins.
- ``LOCALQWEN_NO_THIRD_PARTY_PLUGINS=1`` ignores plugins not shipped with LocalQwen (tests use it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata

ENTRY_POINT_GROUP = "localqwen.plugins"
ONLY_ENV = "LOCALQWEN_PLUGINS"
NO_THIRD_PARTY_ENV = "LOCALQWEN_NO_THIRD_PARTY_PLUGINS"
BUILTIN_DISTRIBUTION = "localqwen"


@dataclass(frozen=True)
class PluginInfo:
    """What metadata alone says about a plugin, before anything is imported."""

    name: str
    target: str
    distribution: str

    @property
    def builtin(self) -> bool:
        return self.distribution == BUILTIN_DISTRIBUTION


def only_from_env() -> set[str] | None:
    """The plugin ids ``LOCALQWEN_PLUGINS`` restricts to, or None when it is unset."""
    if not os.environ.get(ONLY_ENV):
        return None
    return {name.strip() for name in os.environ[ONLY_ENV].split(",") if name.strip()}


def third_party_from_env() -> bool:
    return os.environ.get(NO_THIRD_PARTY_ENV, "") not in ("1", "true", "yes")


def offered_plugins(*, only: set[str] | None = None, third_party: bool = True) -> list[PluginInfo]:
    """Installed ``localqwen.plugins`` entry points, by name; the first of a duplicated name wins."""
    infos: dict[str, PluginInfo] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        info = PluginInfo(name=ep.name, target=ep.value, distribution=ep.dist.name if ep.dist is not None else "")
        if only is not None and info.name not in only:
            continue
        if info.builtin or third_party:
            infos.setdefault(info.name, info)
    return sorted(infos.values(), key=lambda info: info.name)
