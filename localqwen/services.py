"""The one place that assembles the runtime: paths + config -> database, devices, models, engines,
retrieval and jobs.

Every object is created on first use, so starting the app or listing plugins costs nothing. The
runtime objects get explicit arguments (a database, a folder, settings, the device manager); this
object is never handed down into them. It is also the one owner of the config: :meth:`set_config`
writes the file and updates every holder, so no copy goes stale.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localqwen.config import Config
    from localqwen.jobs import JobManager
    from localqwen.paths import AppPaths
    from localqwen.retrieval.knowledge_base import KnowledgeBaseManager
    from localqwen.runtime.device import DeviceManager
    from localqwen.runtime.engine import Engine
    from localqwen.runtime.model_manager import ModelManager
    from localqwen.storage.chat_store import ChatStore
    from localqwen.storage.database import Database


class Services:
    def __init__(self, paths: AppPaths, config: Config) -> None:
        self.paths = paths
        self._config = config

    # -- config ------------------------------------------------------------------------------
    @property
    def config(self) -> Config:
        return self._config

    def set_config(self, section: str, key: str, value: Any) -> Config:
        """Set ``[section] key = value`` in the config file (comments kept) and everywhere it is held.

        Raises ``ConfigError`` when the value would make the file invalid; nothing changes then.
        """
        from localqwen.config_edit import set_config_value

        self.use_config(set_config_value(self.paths.config_file, section, key, value))
        return self._config

    def use_config(self, config: Config) -> None:
        """Adopt an already-validated config (re-read from disk, say) in every holder."""
        self._config = config
        runtime = config.runtime
        if "device" in self.__dict__:
            self.device.configure(prefer=runtime.device, remote_url=runtime.remote_url)
        if "models" in self.__dict__:
            self.models.use_config(config)

    # -- runtime objects ---------------------------------------------------------------------
    @cached_property
    def database(self) -> Database:
        from localqwen.storage.database import Database

        self.paths.ensure()
        return Database(self.paths.database_file)

    @cached_property
    def device(self) -> DeviceManager:
        """This machine's devices and plans; tracks loaded models (nothing probed until asked)."""
        from localqwen.runtime.device import DeviceManager

        runtime = self._config.runtime
        return DeviceManager(prefer=runtime.device, remote_url=runtime.remote_url)

    @cached_property
    def models(self) -> ModelManager:
        """The model catalog, downloads, and local model folders / GGUF files."""
        from localqwen.runtime.model_manager import ModelManager

        return ModelManager(self.paths, self._config)

    def engine(self, model: str | None = None, *, adapter: str | None = None, task: str = "text") -> Engine:
        """A loaded chat engine (cached); ``None`` means the configured default for ``task``."""
        from localqwen.runtime.engine import load_engine
        from localqwen.runtime.model_manager import default_model

        return load_engine(model or default_model(self._config, task), adapter=adapter, task=task,
                           models=self.models, device=self.device, runtime=self._config.runtime)

    @cached_property
    def retrieval(self) -> KnowledgeBaseManager:
        """Knowledge bases (LanceDB + SQLite) shared by the RAG, medical and memory plugins."""
        from localqwen.retrieval.knowledge_base import KnowledgeBaseManager

        return KnowledgeBaseManager(self.database, self.paths.data_dir / "retrieval", device=self.device)

    @cached_property
    def chats(self) -> ChatStore:
        """Every plugin's chat sessions and messages, in the one SQLite database."""
        from localqwen.storage.chat_store import ChatStore

        return ChatStore(self.database)

    @cached_property
    def jobs(self) -> JobManager:
        """Background jobs (actions, downloads, training subprocesses) shared by the frontends."""
        from localqwen.jobs import JobManager

        return JobManager(self.database, self.paths.runs_dir / "jobs")
