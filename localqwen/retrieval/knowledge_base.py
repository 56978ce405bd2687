"""Knowledge bases: named collections of documents you can search.

    manager = KnowledgeBaseManager(database, data_dir / "retrieval", device=device_manager)
    kb = manager.create("papers")
    for event in kb.add_paths(["~/papers"], cancel): ...      # Progress / Warning / Error / Done
    hits = kb.search("what reduces LDL?", k=5, rerank=False)

Adding a batch parses, chunks and embeds every file first (cancellable at any point, nothing
written), then commits the whole batch at once (see store.py for why a crash can't leave half of
it). Re-adding a changed file replaces its chunks; an unchanged file is skipped.

Several processes may add to one knowledge base at once (two `add-documents`, the web view and the
CLI): each reads and embeds in parallel, and commits one at a time under the knowledge base's
writer lock (``<root>/kb-<id>.lock``); see store.py for how that keeps recovery safe.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.paths import PathOutsideRoot, ensure_within
from localqwen.retrieval import store
from localqwen.retrieval.chunking import chunk_blocks, hf_offsets
from localqwen.retrieval.embeddings import DEFAULT_EMBEDDING_MODEL, get_embedder
from localqwen.retrieval.isolated_reader import IsolatedReader, ParseLimits
from localqwen.retrieval.loaders import (
    DEFAULT_MAX_BYTES,
    SUPPORTED_SUFFIXES,
    DocumentError,
    check_regular_file,
)
from localqwen.retrieval.search import FusionSettings, Hit, Mode, SearchIndex
from localqwen.storage.file_lock import FileLock
from localqwen.vocabulary import events
from localqwen.vocabulary.cancel import CancelToken

if TYPE_CHECKING:
    from localqwen.runtime.device import DeviceManager
    from localqwen.storage.database import Database

_NAME = re.compile(r"^[\w][\w .\-]{0,63}$", re.UNICODE)


class KnowledgeBaseError(ValueError):
    """A knowledge-base operation was refused (unknown name, duplicate, bad name...)."""


@dataclass
class KnowledgeBaseInfo:
    id: str
    name: str
    embedding_model: str
    dimension: int
    chunk_tokens: int
    chunk_overlap: int
    table_name: str
    table_version: int | None
    files: int = 0
    chunks: int = 0


@dataclass
class FileRecord:
    path: str
    sha256: str
    size: int
    chunks: int
    encoding: str | None


class KnowledgeBaseManager:
    """Create, list, rename and delete knowledge bases; hands out :class:`KnowledgeBase` objects."""

    def __init__(self, database: Database, root: Path, *, device: DeviceManager | None = None,
                 default_reranker: str | None = None, allowed_roots: list[Path] | None = None,
                 max_file_bytes: int = DEFAULT_MAX_BYTES, parse_limits: ParseLimits | None = None) -> None:
        """``root`` holds the LanceDB tables; ``device`` shares and accounts for the embedding and
        reranker models (without it each knowledge base loads its own); ``default_reranker`` is the
        cross-encoder ``search(rerank=True)`` uses; ``parse_limits`` bound the time and memory one
        document may cost to read (each is read in a separate worker process)."""
        self.database = database
        self.device = device
        self.default_reranker = default_reranker or None
        store.migrate(self.database)
        self.root = root
        self.allowed_roots = allowed_roots
        self.max_file_bytes = _check_max_bytes(max_file_bytes)
        self.parse_limits = parse_limits or ParseLimits()
        self._snapshots: dict[tuple[str, str, int | None], SearchIndex] = {}
        self._lock = threading.Lock()
        self._writer_locks: dict[str, FileLock] = {}
        self._writer_locks_guard = threading.Lock()
        self._remove_orphans()

    def writer_lock(self, kb_id: str) -> FileLock:
        """The cross-process lock a writer of this knowledge base holds while it commits."""
        with self._writer_locks_guard:
            lock = self._writer_locks.get(kb_id)
            if lock is None:
                lock = self._writer_locks[kb_id] = FileLock(self.root / f"kb-{kb_id}.lock")
            return lock

    def _remove_orphans(self) -> None:
        """Drop LanceDB folders whose knowledge base is gone (a delete that died after its SQLite
        commit). A folder is only ever created after its row exists, so this never races a create."""
        import shutil

        if not self.root.is_dir():
            return
        known = {row["id"] for row in self.database.connection.execute("SELECT id FROM knowledge_bases")}
        for folder in self.root.glob("kb-*"):
            if folder.is_dir() and folder.name[3:] not in known:
                shutil.rmtree(folder, ignore_errors=True)
            elif folder.suffix == ".lock" and folder.stem[3:] not in known:
                folder.unlink(missing_ok=True)  # the writer lock of a deleted knowledge base

    # ------------------------------------------------------------ CRUD
    def create(self, name: str, *, embedding_model: str | None = None, chunk_tokens: int = 200,
               chunk_overlap: int = 40) -> KnowledgeBase:
        name = _check_name(name)
        if self._row(name) is not None:
            raise KnowledgeBaseError(f"a knowledge base named '{name}' already exists")
        model = embedding_model or DEFAULT_EMBEDDING_MODEL
        dimension = get_embedder(model, manager=self.device).dimension
        kb_id = uuid.uuid4().hex[:12]
        with self.database.connect() as conn:
            conn.execute(
                "INSERT INTO knowledge_bases(id, name, embedding_model, dimension, chunk_tokens, chunk_overlap,"
                " table_name, table_version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)",
                (kb_id, name, model, dimension, chunk_tokens, chunk_overlap, "chunks_0", time.time()))
        return self.get(name)

    def list(self) -> list[KnowledgeBaseInfo]:
        rows = self.database.connection.execute(
            "SELECT kb.*, COUNT(f.path) AS files, COALESCE(SUM(f.chunks), 0) AS chunks FROM knowledge_bases kb "
            "LEFT JOIN knowledge_base_files f ON f.kb_id = kb.id GROUP BY kb.id ORDER BY kb.name").fetchall()
        return [_info(row) for row in rows]

    def get(self, name_or_id: str) -> KnowledgeBase:
        row = self._row(name_or_id)
        if row is None:
            known = ", ".join(info.name for info in self.list()) or "none yet"
            raise KnowledgeBaseError(f"no knowledge base named '{name_or_id}' (known: {known})")
        return KnowledgeBase(self, _info(row))

    def get_or_create(self, name: str, **options: Any) -> KnowledgeBase:
        return self.get(name) if self._row(name) is not None else self.create(name, **options)

    def rename(self, name: str, new_name: str) -> KnowledgeBase:
        kb = self.get(name)
        new_name = _check_name(new_name)
        if self._row(new_name) is not None:
            raise KnowledgeBaseError(f"a knowledge base named '{new_name}' already exists")
        with self.database.connect() as conn:
            conn.execute("UPDATE knowledge_bases SET name = ? WHERE id = ?", (new_name, kb.id))
        return self.get(new_name)

    def delete(self, name: str) -> None:
        kb = self.get(name)
        with self.writer_lock(kb.id):  # not under a writer in another process mid-commit
            with self.database.connect() as conn:
                conn.execute("DELETE FROM knowledge_bases WHERE id = ?", (kb.id,))
            kb.chunk_store.drop()

    def folder(self, kb_id: str) -> Path:
        return self.root / f"kb-{kb_id}"

    def _row(self, name_or_id: str):
        return self.database.connection.execute(
            "SELECT kb.*, 0 AS files, 0 AS chunks FROM knowledge_bases kb WHERE kb.name = ? OR kb.id = ?",
            (name_or_id, name_or_id)).fetchone()


class KnowledgeBase:
    def __init__(self, manager: KnowledgeBaseManager, info: KnowledgeBaseInfo) -> None:
        self.manager = manager
        self.info = info
        self.id = info.id
        self.name = info.name
        self.chunk_store = store.ChunkStore(manager.folder(info.id), info.table_name, info.dimension)

    @property
    def embedder(self):
        return get_embedder(self.info.embedding_model, manager=self.manager.device)

    def files(self) -> list[FileRecord]:
        rows = self.manager.database.connection.execute(
            "SELECT path, sha256, size, chunks, encoding FROM knowledge_base_files WHERE kb_id = ? ORDER BY path",
            (self.id,)).fetchall()
        return [FileRecord(**dict(row)) for row in rows]

    def _recorded_version(self) -> int | None:
        """The last committed table version; follows a rebuild another process switched to."""
        row = self.manager.database.connection.execute(
            "SELECT table_name, table_version FROM knowledge_bases WHERE id = ?", (self.id,)).fetchone()
        if row is None:
            raise KnowledgeBaseError(f"knowledge base '{self.name}' was deleted")
        if row["table_name"] != self.chunk_store.table_name:
            self.chunk_store = store.ChunkStore(self.chunk_store.folder, row["table_name"], self.info.dimension)
            self.info.table_name = row["table_name"]
        return row["table_version"]

    def _open(self, *, repair: bool):
        """(table, version) at the last committed version. ``repair`` only under the writer lock:
        it creates the table or undoes a dead writer's unrecorded commit (store.ChunkStore.open)."""
        recorded = self._recorded_version()
        table, version = self.chunk_store.open(recorded, repair=repair)
        if repair and recorded != version:
            self._record(version)
        return table, version

    def _record(self, version: int, conn=None) -> None:
        sql, args = "UPDATE knowledge_bases SET table_version = ? WHERE id = ?", (version, self.id)
        if conn is not None:
            conn.execute(sql, args)
        else:
            with self.manager.database.connect() as c:
                c.execute(sql, args)

    # ------------------------------------------------------------ ingestion
    def add_paths(self, paths: Iterable[str | os.PathLike[str]], cancel: CancelToken | None = None, *,
                  allowed_roots: list[Path] | None = None, max_file_bytes: int | None = None,
                  parse_limits: ParseLimits | None = None, _rebuild: bool = False) -> Iterator[Any]:
        """Ingest files and folders; yields events. Bad files get an Error each; the rest go in.

        Each file is parsed in a worker process under ``parse_limits`` (the manager's by default), so a
        file that hangs, floods memory or crashes the parser is reported by name and skipped."""
        cancel = cancel or CancelToken()
        started = time.monotonic()
        roots = allowed_roots if allowed_roots is not None else self.manager.allowed_roots
        max_bytes = _check_max_bytes(self.manager.max_file_bytes if max_file_bytes is None else max_file_bytes)
        files, problems = _expand(paths, roots)
        for problem_path, message in problems:
            yield events.Error(message=message, field=str(problem_path))
        known = {} if _rebuild else {record.path: record for record in self.files()}
        reader = IsolatedReader(parse_limits or self.manager.parse_limits)
        if files:
            reader.start()  # the worker imports its parsers while the embedder loads
        embedder = self.embedder
        offsets = hf_offsets(embedder.tokenizer)
        tracker = events.ProgressTracker(len(files), unit="file", task="ingest", message="reading")
        rows: list[dict[str, Any]] = []
        records: list[tuple[str, str, str, int, int, str | None]] = []
        replaced: list[str] = []
        failed = [str(p) for p, _ in problems]
        skipped: list[str] = []
        pending_texts: list[str] = []
        for path in files:
            if cancel.cancelled:
                reader.close()
                yield events.Done(status="cancelled", summary="ingestion cancelled; the index is unchanged",
                                  elapsed_s=time.monotonic() - started)
                return
            key = str(path)
            try:
                data_hash = _sha256(path, max_bytes)
                if key in known and known[key].sha256 == data_hash:
                    skipped.append(key)
                    yield tracker.advance(message=f"unchanged: {path.name}")
                    continue
                document = reader.load(path, max_bytes=max_bytes)
                chunks = chunk_blocks(document.blocks, offsets, max_tokens=self.info.chunk_tokens,
                                      overlap=self.info.chunk_overlap)
            except (DocumentError, OSError) as exc:
                failed.append(key)
                yield events.Error(message=str(exc) if isinstance(exc, DocumentError) else f"{path.name}: {exc}",
                                   field=key)
                yield tracker.advance(message=f"failed: {path.name}")
                continue
            for warning in document.warnings:
                yield events.Warning(message=warning)
            file_id = hashlib.sha1(key.encode()).hexdigest()[:16]
            if key in known:
                replaced.append(file_id)
            for chunk in chunks:
                rows.append({"chunk_id": f"{file_id}:{chunk.index}", "file_id": file_id, "source": key,
                             "page": chunk.page if chunk.page is not None else -1, "heading": chunk.heading,
                             "text": chunk.text})
                pending_texts.append(index_text(chunk.heading, chunk.text))
            records.append((key, file_id, data_hash, path.stat().st_size, len(chunks), document.encoding))
            yield tracker.advance(message=f"read {path.name} ({len(chunks)} chunks)")
        reader.close()

        # Embed everything (the slow part), checking for cancel between batches.
        embed_tracker = events.ProgressTracker(len(rows), unit="chunk", task="embed", message="embedding")
        vectors = []
        batch = 256
        for start in range(0, len(pending_texts), batch):
            if cancel.cancelled:
                yield events.Done(status="cancelled", summary="ingestion cancelled; the index is unchanged",
                                  elapsed_s=time.monotonic() - started)
                return
            vectors.extend(embedder.encode(pending_texts[start:start + batch]))
            yield embed_tracker.update(min(len(rows), start + batch))
        for row, vector in zip(rows, vectors, strict=False):
            row["vector"] = vector

        if _rebuild:
            self._commit_rebuild(rows, records)  # rebuild() holds the writer lock throughout
        elif records:
            lock = self.manager.writer_lock(self.id)
            if not lock.acquire(blocking=False):
                holder = lock.holder()
                yield events.Log(message=f"waiting for another writer of '{self.name}'"
                                         + (f" ({holder})" if holder else "") + " to finish its commit")
                if not lock.acquire(cancelled=lambda: cancel.cancelled):
                    yield events.Done(status="cancelled", summary="ingestion cancelled; the index is unchanged",
                                      elapsed_s=time.monotonic() - started)
                    return
            try:
                self._commit(rows, records, replaced, [])
            finally:
                lock.release()
        added = [r[0] for r in records]
        summary = f"{len(added)} file(s) added ({len(rows)} chunks)"
        if skipped:
            summary += f", {len(skipped)} unchanged"
        if failed:
            summary += f", {len(failed)} failed"
        yield events.Done(status="ok" if added or skipped or not failed else "failed", summary=summary,
                          result={"added": added, "skipped": skipped, "failed": failed, "chunks": len(rows)},
                          elapsed_s=time.monotonic() - started)

    def ingest(self, paths: Iterable[str | os.PathLike[str]], cancel: CancelToken | None = None,
               **options: Any) -> events.Done:
        """Run :meth:`add_paths` to the end and return its Done event (for scripts and tests)."""
        done = None
        for event in self.add_paths(paths, cancel, **options):
            if isinstance(event, events.Done):
                done = event
        assert done is not None
        return done

    def remove_paths(self, paths: Iterable[str | os.PathLike[str]]) -> list[str]:
        """Forget files (their chunks go too); returns the paths that were removed."""
        wanted = {str(Path(p).expanduser().resolve()) for p in paths}
        targets = [r.path for r in self.files() if r.path in wanted or any(
            r.path.startswith(w.rstrip("/") + "/") for w in wanted)]
        if targets:
            file_ids = [hashlib.sha1(p.encode()).hexdigest()[:16] for p in targets]
            with self.manager.writer_lock(self.id):
                self._commit([], [], file_ids, targets)
        return targets

    def replace_paths(self, paths: Iterable[str | os.PathLike[str]], cancel: CancelToken | None = None,
                      **options: Any) -> Iterator[Any]:
        """Re-read files even if unchanged (e.g. after changing chunk settings)."""
        paths = list(paths)
        self.remove_paths(paths)
        yield from self.add_paths(paths, cancel, **options)

    def _commit(self, rows, records, delete_file_ids: list[str], removed_paths: list[str]) -> None:
        """Write one batch to LanceDB, then record it in SQLite. The caller holds the writer lock
        (taken before the in-process lock: the order every writer takes them in)."""
        with self.manager._lock:
            table, _ = self._open(repair=True)
            # Files another writer committed since this batch was read: replace their chunks, don't
            # add a second copy (two processes adding the same file at once).
            now_known = {record.path for record in self.files()}
            deletes = list(dict.fromkeys([*delete_file_ids, *(r[1] for r in records if r[0] in now_known)]))
            version = self.chunk_store.write(table, delete_file_ids=deletes, rows=rows)
            with self.manager.database.connect() as conn:
                for path in removed_paths:
                    conn.execute("DELETE FROM knowledge_base_files WHERE kb_id = ? AND path = ?", (self.id, path))
                self._insert_records(conn, records)
                self._record(version, conn)

    def _insert_records(self, conn, records) -> None:
        now = time.time()
        for path, file_id, sha, size, chunks, encoding in records:
            conn.execute(
                "INSERT INTO knowledge_base_files(kb_id, path, file_id, sha256, size, chunks, encoding, added_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(kb_id, path) DO UPDATE SET"
                " file_id = excluded.file_id, sha256 = excluded.sha256, size = excluded.size,"
                " chunks = excluded.chunks, encoding = excluded.encoding, added_at = excluded.added_at",
                (self.id, path, file_id, sha, size, chunks, encoding, now))

    def rebuild(self, cancel: CancelToken | None = None) -> Iterator[Any]:
        """Re-create the index from the recorded source files into a fresh table, then switch to it
        in one SQLite transaction (the old index serves until then; e.g. after LanceDB data was lost)."""
        # The whole rebuild holds the writer lock: a batch another process committed meanwhile would
        # be missing from the new table (it is read from the file list taken now).
        with self.manager.writer_lock(self.id):
            paths = [r.path for r in self.files()]
            yield from self.add_paths(paths, cancel, allowed_roots=[], _rebuild=True)

    def _commit_rebuild(self, rows, records) -> None:
        old_name = self.info.table_name
        new_name = f"chunks_{int(old_name.rsplit('_', 1)[-1]) + 1}"
        new_store = store.ChunkStore(self.chunk_store.folder, new_name, self.info.dimension)
        new_store.drop_table()  # leftovers of a rebuild that died before switching
        with self.manager._lock:
            table, _ = new_store.open(None, repair=True)
            version = new_store.write(table, delete_file_ids=[], rows=rows)
            with self.manager.database.connect() as conn:
                conn.execute("DELETE FROM knowledge_base_files WHERE kb_id = ?", (self.id,))
                self._insert_records(conn, records)
                conn.execute("UPDATE knowledge_bases SET table_name = ?, table_version = ? WHERE id = ?",
                             (new_name, version, self.id))
            self.chunk_store.drop_table()
            self.chunk_store = new_store
            self.info.table_name = new_name

    # ------------------------------------------------------------ search
    def index(self) -> SearchIndex:
        """The in-memory search snapshot of the current good version (built once per version)."""
        import numpy as np

        with self.manager._lock:
            # A reader repairs only when no writer is alive (it gets the lock at once); otherwise it
            # reads the recorded version and leaves the live writer's work alone.
            lock = self.manager.writer_lock(self.id)
            try:
                held = lock.acquire(blocking=False)
            except OSError:  # a read-only data folder: no lock file, so only read
                held = False
            try:
                table, version = self._open(repair=held)
            finally:
                if held:
                    lock.release()
            key = (self.id, self.info.table_name, version)
            cached = self.manager._snapshots.get(key)
            if cached is not None:
                return cached
            data = self.chunk_store.snapshot(table) if table is not None else self.chunk_store.empty()
            n = data.num_rows
            vectors = (np.asarray(data.column("vector").combine_chunks().flatten(), dtype=np.float32)
                       .reshape(n, self.info.dimension) if n else np.zeros((0, self.info.dimension), np.float32))
            texts = data.column("text").to_pylist()
            headings = data.column("heading").to_pylist()
            snapshot = SearchIndex(
                texts, vectors, sources=data.column("source").to_pylist(),
                pages=[p if p >= 0 else None for p in data.column("page").to_pylist()], headings=headings,
                chunk_ids=data.column("chunk_id").to_pylist(), settings=FusionSettings(),
                index_texts=[index_text(h, t) for h, t in zip(headings, texts, strict=False)])
            for old in [k for k in self.manager._snapshots if k[0] == self.id]:
                del self.manager._snapshots[old]
            self.manager._snapshots[key] = snapshot
            return snapshot

    def search(self, query: str, k: int = 10, rerank: bool | str = False, *, mode: Mode = "hybrid") -> list[Hit]:
        """Best chunks for ``query``. ``rerank`` is False, True (configured model) or a cross-encoder id."""
        snapshot = self.index()
        if not len(snapshot) or not query.strip():
            return []
        vector = self.embedder.encode_query(query) if mode != "bm25" else None
        reranker = None
        if rerank:
            from localqwen.retrieval.rerank import get_reranker

            name = rerank if isinstance(rerank, str) else self.manager.default_reranker
            if not name:
                raise KnowledgeBaseError("rerank is on but no cross-encoder was given: pass rerank= a folder or "
                                         "hub id (e.g. BAAI/bge-reranker-base)")
            reranker = get_reranker(name, manager=self.manager.device)
        return snapshot.search(query, vector, k=k, mode=mode, reranker=reranker)


def index_text(heading: str, text: str) -> str:
    """What gets embedded and keyword-indexed: the heading path gives a chunk its context."""
    return f"{heading}\n{text}" if heading else text


def _check_max_bytes(max_bytes: int) -> int:
    if max_bytes <= 0:
        raise KnowledgeBaseError(f"the size limit for one document must be positive, got {max_bytes} bytes "
                                 "(max_file_mb in [plugins.rag] is in megabytes, at least 1)")
    return max_bytes


def _check_name(name: str) -> str:
    name = (name or "").strip()
    if not _NAME.match(name):
        raise KnowledgeBaseError(f"invalid knowledge base name '{name}': use letters, digits, space, '.', '-' "
                                 "or '_' (at most 64 characters)")
    return name


def _info(row) -> KnowledgeBaseInfo:
    return KnowledgeBaseInfo(**{key: row[key] for key in row.keys() if key != "created_at"})  # noqa: SIM118 (sqlite3.Row)


def _sha256(path: Path, max_bytes: int) -> str:
    check_regular_file(path)  # before open(): opening a named pipe waits forever for a writer
    size = path.stat().st_size
    if size > max_bytes:
        raise DocumentError(f"{path.name}: {size / 2**20:.0f} MB is over the {max_bytes / 2**20:.0f} MB limit "
                            "for one document")
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _expand(paths: Iterable[str | os.PathLike[str]], roots: list[Path] | None) -> tuple[list[Path], list[tuple[str, str]]]:
    """Files to read (folders walked for supported types) and per-path problems."""
    files: list[Path] = []
    problems: list[tuple[str, str]] = []
    seen: set[Path] = set()
    for raw in paths:
        try:
            path = ensure_within(roots, raw) if roots else Path(raw).expanduser().resolve()
        except PathOutsideRoot as exc:
            problems.append((str(raw), str(exc)))
            continue
        if not path.exists():
            problems.append((str(raw), f"{raw}: no such file or folder"))
            continue
        # Not only regular files: a named pipe called notes.md gets its own error instead of silence.
        candidates = sorted(p for p in path.rglob("*") if not p.is_dir()) if path.is_dir() else [path]
        for candidate in candidates:
            candidate = candidate.resolve()
            if path.is_dir() and candidate.suffix.lower() not in SUPPORTED_SUFFIXES:
                continue  # folders: silently skip other file types
            if roots:
                try:  # a symlink inside an allowed folder may still point outside it
                    ensure_within(roots, candidate)
                except PathOutsideRoot as exc:
                    problems.append((str(candidate), str(exc)))
                    continue
            if candidate not in seen:
                seen.add(candidate)
                files.append(candidate)
    return files, problems
