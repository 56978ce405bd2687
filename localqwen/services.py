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
    def retrieval(self) -> KnowledgeBaseManager:
        """Knowledge bases (LanceDB + SQLite) shared by the RAG, medical and memory plugins."""
        from localqwen.retrieval.knowledge_base import KnowledgeBaseManager

        return KnowledgeBaseManager(self)

    @cached_property
    def jobs(self) -> JobManager:
        """Background jobs (actions, downloads, training subprocesses) shared by the frontends."""
        from localqwen.jobs import JobManager

        return JobManager(self.database, self.paths)
