"""What a plugin gets to work with: typed handles on the runtime, its config section and its folders.

No module-level globals: everything a plugin uses comes in here, and only what is listed here.
The objects behind the properties are built on first use by the one assembler (``Services``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.vocabulary.cancel import CancelToken

if TYPE_CHECKING:
    from pydantic import BaseModel

    from localqwen.config import Config
    from localqwen.jobs import JobManager
    from localqwen.paths import AppPaths
    from localqwen.plugin_api.extensions import Extensions
    from localqwen.retrieval.knowledge_base import KnowledgeBaseManager
    from localqwen.runtime.device import DeviceManager
    from localqwen.runtime.engine import Engine
    from localqwen.runtime.model_manager import ModelManager
    from localqwen.services import Services
    from localqwen.storage.chat_store import PluginChats
    from localqwen.storage.database import Database


@dataclass
class Context:
    plugin_id: str
    services: Services = field(repr=False)
    cancel: CancelToken = field(default_factory=CancelToken)
    # Gives the app's one Extensions object; a callable because gathering it loads every plugin,
    # which only the few actions that read it (the trainer's data and evaluate steps) should pay.
    extensions_loader: Callable[[], Extensions] | None = field(default=None, repr=False)
    # "which model is answering" lines, one per engine this run asked for; the runner shows each
    # as a Log event as soon as it appears and puts them in the final Done's result["answered_by"].
    models_used: list[str] = field(default_factory=list)
    # The plugin's ``config_model``: ``settings`` checks the section against it, so a wrong value
    # is reported with the config file, key and line (not as a raw pydantic error later).
    settings_model: type[BaseModel] | None = field(default=None, repr=False)

    # -- settings and folders ---------------------------------------------------------------
    @property
    def config(self) -> Config:
        return self.services.config

    @property
    def settings(self) -> dict[str, Any]:
        """This plugin's ``[plugins.<id>]`` config section. Raises ``ConfigError`` (file, key, line)
        when a value does not fit the plugin's ``config_model``."""
        section = self.config.plugin_section(self.plugin_id)
        if self.settings_model is not None:
            from localqwen.config import check_plugin_section

            check_plugin_section(self.paths.config_file, self.plugin_id, self.settings_model, section)
        return section

    @property
    def paths(self) -> AppPaths:
        return self.services.paths

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

    # -- the runtime -------------------------------------------------------------------------
    @property
    def device(self) -> DeviceManager:
        return self.services.device

    @property
    def models(self) -> ModelManager:
        return self.services.models

    def engine(self, model: str | None = None, *, adapter: str | None = None, task: str = "text") -> Engine:
        """A loaded chat engine; ``None`` means this plugin's ``model`` setting, else the default for ``task``."""
        engine = self.services.engine(model or self.settings.get("model") or None, adapter=adapter, task=task)
        described = describe_engine(engine, adapter)
        if described not in self.models_used:
            self.models_used.append(described)
        return engine

    def default_model(self, task: str = "text") -> str:
        """The app's default model for ``task`` (``[runtime]`` settings, else the catalog default)."""
        from localqwen.runtime.model_manager import default_model

        return default_model(self.config, task)

    @property
    def retrieval(self) -> KnowledgeBaseManager:
        return self.services.retrieval

    @property
    def jobs(self) -> JobManager:
        return self.services.jobs

    @property
    def database(self) -> Database:
        return self.services.database

    @property
    def extensions(self) -> Extensions:
        """What every plugin registered (data sources, metrics, tools, shortcuts), LocalQwen's own included."""
        if self.extensions_loader is None:
            raise RuntimeError("this Context was made without the app's extensions; make it with Workbench.context()")
        return self.extensions_loader()

    @property
    def chats(self) -> PluginChats:
        """This plugin's chat sessions (its own namespace in the one chat store)."""
        return self.services.chats.for_plugin(self.plugin_id)


def describe_engine(engine: Any, adapter: str | Path | None = None) -> str:
    """``model (backend, device) + adapter NAME``: what the frontends show as "who is answering"."""
    name = str(getattr(engine, "model_id", "") or type(engine).__name__)
    plan = getattr(engine, "plan", None)
    where = [str(part) for part in (getattr(engine, "backend", ""), getattr(plan, "device", "")) if part]
    text = f"{name} ({', '.join(where)})" if where else name
    if adapter:
        text += f" + adapter {Path(str(adapter)).name or adapter}"
    return text
