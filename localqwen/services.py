"""Shared runtime services handed to plugins through ``ctx``.

Every service is created on first use, so starting the app or listing plugins costs nothing.
The runtime (device manager, model manager, engines, retrieval, training) hangs off this object;
frontends and plugins reach it only through here.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localqwen.config import Config
    from localqwen.jobs import JobManager
    from localqwen.paths import AppPaths
    from localqwen.retrieval.knowledge_base import KnowledgeBaseManager
    from localqwen.runtime.device import DeviceManager
    from localqwen.runtime.engine import Engine
    from localqwen.runtime.model_manager import ModelManager
    from localqwen.storage.database import Database


class Services:
    def __init__(self, paths: AppPaths, config: Config) -> None:
        self.paths = paths
        self.config = config

    @cached_property
    def database(self) -> Database:
        from localqwen.storage.database import Database

        self.paths.ensure()
        return Database(self.paths.database_file)

    @cached_property
    def device(self) -> DeviceManager:
        """This machine's devices and plans; tracks loaded models (nothing probed until asked)."""
        from localqwen.runtime.device import DeviceManager

        runtime = self.config.runtime
        return DeviceManager(prefer=runtime.device, remote_url=runtime.remote_url)

    @cached_property
    def models(self) -> ModelManager:
        """The model catalog, downloads, and local model folders / GGUF files."""
        from localqwen.runtime.model_manager import ModelManager

        return ModelManager(self.paths, self.config)

    def engine(self, model: str | None = None, *, adapter: str | None = None, task: str = "text") -> Engine:
        """A loaded chat engine (cached); ``None`` means the configured default for ``task``."""
        from localqwen.runtime.engine import load_engine
        from localqwen.runtime.model_manager import default_model

        return load_engine(model or default_model(self.config, task), adapter=adapter, services=self, task=task)

    @cached_property
    def retrieval(self) -> KnowledgeBaseManager:
        """Knowledge bases (LanceDB + SQLite) shared by the RAG, medical and memory plugins."""
        from localqwen.retrieval.knowledge_base import KnowledgeBaseManager

        return KnowledgeBaseManager(self)

    @cached_property
    def jobs(self) -> JobManager:
        """Background jobs (actions, downloads, training subprocesses) shared by the frontends."""
        from localqwen.jobs import JobManager

        return JobManager(self.database, self.paths)
