"""The memory store: SQLite is the source of truth, vectors sit beside it in LanceDB.

Memories live in the app's one SQLite database (namespace ``memory``), not in a file of their
own: the chat turns they come from are in that same database (a memory links to its source
session and message), one file is one backup, and the shared :class:`Database` already gives WAL
mode and per-thread connections, so two processes (a chat and a consolidation job) can write at
once. Every write is one transaction.

Vectors are a cache: a LanceDB table (``memory_vectors``, beside the knowledge bases under
``<data>/retrieval/memory``) keyed by memory id and embedding model. A search first embeds any
active memory the table lacks (a crash between the SQLite commit and the LanceDB write, a new
embedder, a deleted folder), so the table can always be rebuilt from SQLite
(:meth:`MemoryStore.rebuild_vectors`). Each memory's token vectors, for word-by-word matching, are
a second such cache (``token_vectors.py``), written with the vector from the same forward pass.

A memory is per persona. ``kind`` is ``fact`` (a statement extracted from a turn or added by
hand; ``fact`` holds it) or ``turn`` (a raw turn kept because nothing could be extracted, or for
context; ``fact`` is None). Forgetting keeps a tombstone (id, fingerprint, times) with the text
erased: it leaves recall, is excluded from the next consolidation, and the fingerprint stops an
import or a re-extraction from bringing it back.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from localqwen.retrieval.bm25 import MemoizingTokenizer
from localqwen_memory.lance_tables import open_or_create
from localqwen_memory.token_vectors import TokenVectors

if TYPE_CHECKING:
    import numpy as np

    from localqwen.retrieval.embeddings import Embedder
    from localqwen.retrieval.search import SearchIndex
    from localqwen.storage.database import Database

NAMESPACE = "memory"
MIGRATIONS = [
    """
    CREATE TABLE memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        persona TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('fact', 'turn')),
        text TEXT NOT NULL,
        fact TEXT,
        context TEXT NOT NULL DEFAULT '',
        subject TEXT,
        attribute TEXT,
        value TEXT,
        fingerprint TEXT NOT NULL,
        source_session INTEGER,
        source_message INTEGER,
        created_at REAL NOT NULL,
        valid_from REAL NOT NULL,
        valid_to REAL,
        superseded_by INTEGER REFERENCES memories(id),
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'forgotten')),
        consolidation TEXT NOT NULL DEFAULT 'pending'
            CHECK (consolidation IN ('pending', 'consolidated', 'excluded')),
        adapter_id TEXT,
        updated_at REAL NOT NULL
    );
    CREATE INDEX memories_persona ON memories(persona, status);
    CREATE INDEX memories_fingerprint ON memories(persona, fingerprint);
    CREATE INDEX memories_attribute ON memories(persona, subject, attribute);
    CREATE TABLE memory_revisions (persona TEXT PRIMARY KEY, revision INTEGER NOT NULL);
    CREATE TABLE memory_counters (
        persona TEXT NOT NULL,
        name TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (persona, name)
    )
    """,
]

Kind = Literal["fact", "turn"]
Status = Literal["active", "superseded", "forgotten"]
Consolidation = Literal["pending", "consolidated", "excluded"]
EXPORT_FORMAT = "localqwen-memory"
EXPORT_VERSION = 1
VECTOR_TABLE = "memory_vectors"
# Each write's vectors are one LanceDB append, and each append is a fragment of its own (a version,
# a manifest, a data file): 1,000 single appends left 3,003 files, 52 MB and a 246 ms read of the
# table, where one compacted fragment is 1.9 MB and reads in 15 ms (lancedb 0.40, measured
# 2026-11-24). So every COMPACT_AFTER_APPENDS appends of this process compact the table (~0.5 s
# at 1,000 rows, on a thread of its own), dropping versions older than
# COMPACT_KEEP_VERSIONS_FOR so that a reader in another process never loses the version it reads.
COMPACT_AFTER_APPENDS = 100
COMPACT_KEEP_VERSIONS_FOR_S = 300


class MemoryStoreError(ValueError):
    """A memory request that cannot be done (unknown id, bad input); the message says why."""


@dataclass
class MemoryRecord:
    id: int
    persona: str
    kind: str
    text: str
    fact: str | None
    context: str
    subject: str | None
    attribute: str | None
    value: str | None
    fingerprint: str
    source_session: int | None
    source_message: int | None
    created_at: float
    valid_from: float
    valid_to: float | None
    superseded_by: int | None
    status: str
    consolidation: str
    adapter_id: str | None
    updated_at: float

    @property
    def statement(self) -> str:
        """What the memory says: the extracted fact, else the raw text."""
        return self.fact or self.text

    @property
    def source(self) -> str:
        """Where it came from, as the browser and the prompt show it ("session 3, message 5")."""
        if self.source_session is None:
            return "added by hand"
        where = f"session {self.source_session}"
        return where + (f", message {self.source_message}" if self.source_message is not None else "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MemoryHit:
    memory: MemoryRecord
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    # each topic word of the query: its best cosine among the memory's own words (token_vectors.py)
    token_match: np.ndarray | None = None


def normalise(text: str) -> str:
    """Lower case, punctuation and extra spaces gone: what exact-duplicate detection compares."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def fingerprint(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()[:32]


class ImportedMemory(BaseModel):
    """One memory in an export file; what :meth:`MemoryStore.import_` accepts."""

    model_config = ConfigDict(extra="ignore")

    id: int | None = None
    kind: Kind = "fact"
    text: str = ""
    fact: str | None = None
    context: str = ""
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None
    fingerprint: str | None = None
    source_session: int | None = None
    source_message: int | None = None
    created_at: float | None = None
    valid_from: float | None = None
    valid_to: float | None = None
    superseded_by: int | None = None
    status: Status = "active"
    consolidation: Consolidation = "pending"
    adapter_id: str | None = None

    @field_validator("text", "fact", "context", "subject", "attribute", "value")
    @classmethod
    def _bounded(cls, value: str | None) -> str | None:
        if value is not None and len(value) > 20_000:
            raise ValueError("longer than 20,000 characters")
        return value


class ExportFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    format: Literal["localqwen-memory"]
    version: int = Field(ge=1, le=EXPORT_VERSION)
    persona: str = Field(min_length=1, max_length=200)
    memories: list[ImportedMemory]


def _now() -> float:
    return time.time()


class MemoryStore:
    """All memories of all personas. ``embedder`` is a zero-argument callable returning an
    :class:`Embedder` (loaded only when a vector is first needed); None means BM25-only search."""

    def __init__(self, database: Database, vectors_dir: Path | None = None, *,
                 embedder: Callable[[], Embedder] | None = None) -> None:
        self.database = database
        self.vectors_dir = Path(vectors_dir) if vectors_dir is not None else None
        self._embedder_loader = embedder
        self._embedder: Embedder | None = None
        self._lock = threading.RLock()
        self._indexes: dict[str, tuple[int, str, _PersonaIndex]] = {}
        # Vectors already read from (or written to) LanceDB by this process, per embedding model:
        # a write bumps the revision and rebuilds the index, which must not re-read the table.
        self._vector_cache: dict[str, dict[tuple[int, str], np.ndarray]] = {}
        self._tokens = TokenVectors(self.vectors_dir)
        # search matches the query word by word on its candidates (recall weighs it); False: sentence vectors only
        self.token_matching = True
        # A write that only adds memories extends the persona's index (``_extended_index``); other
        # writes rebuild it, and kept tokens make that rebuild tokenize only what changed.
        # ``incremental_index`` False always rebuilds: the baseline of bench_memory_write_search.py.
        self._tokenizer = MemoizingTokenizer()
        self.incremental_index = True
        self.compact_after_appends = COMPACT_AFTER_APPENDS
        self._appends = 0
        self.compaction: threading.Thread | None = None  # the running (or last) compaction
        database.migrate(NAMESPACE, MIGRATIONS)

    @property
    def _conn(self):
        return self.database.connection

    # ------------------------------------------------------------------ writing
    def add(self, text: str, *, persona: str = "default", fact: str | None = None, kind: Kind | None = None,
            context: str = "", subject: str | None = None, attribute: str | None = None, value: str | None = None,
            source_session: int | None = None, source_message: int | None = None,
            valid_from: float | None = None, respect_tombstones: bool = True) -> tuple[MemoryRecord, bool]:
        """Store a memory; returns (memory, created). An active memory saying the same thing (same
        fingerprint) is returned instead of a copy (``created`` False). With ``respect_tombstones``
        a forgotten memory's fingerprint blocks it too (raises :class:`MemoryStoreError`)."""
        text = (text or "").strip()
        fact = fact.strip() if fact else None
        kind = kind or ("fact" if fact is not None or source_session is None else "turn")
        if kind == "fact" and fact is None:
            fact = text
        if not text and not fact:
            raise MemoryStoreError("a memory needs some text")
        if kind not in ("fact", "turn"):
            raise MemoryStoreError(f"unknown memory kind '{kind}' (fact or turn)")
        persona = _check_persona(persona)
        print_ = fingerprint(fact or text)
        now = _now()
        with self.database.connect() as conn:
            same = conn.execute(
                "SELECT * FROM memories WHERE persona = ? AND fingerprint = ? AND status != 'superseded' "
                "ORDER BY status = 'active' DESC, id DESC LIMIT 1", (persona, print_)).fetchone()
            if same is not None and same["status"] == "active":
                return _record(same), False
            if same is not None and same["status"] == "forgotten" and respect_tombstones:
                raise MemoryStoreError(f"memory {same['id']} with this content was forgotten; not adding it again")
            cursor = conn.execute(
                "INSERT INTO memories(persona, kind, text, fact, context, subject, attribute, value, fingerprint, "
                "source_session, source_message, created_at, valid_from, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (persona, kind, text or fact, fact, context, _lower(subject), _lower(attribute), value, print_,
                 source_session, source_message, now, valid_from if valid_from is not None else now, now))
            self._bump(conn, persona)
            row = conn.execute("SELECT * FROM memories WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return _record(row), True

    def supersede(self, old_id: int, new: int | dict[str, Any]) -> MemoryRecord:
        """Replace memory ``old_id`` by ``new`` (an existing memory id, or ``add`` keyword arguments):
        the old one stays with its history, ``valid_to`` set and status ``superseded``; it leaves
        recall and the consolidation set. Returns the new memory."""
        old = self.get(old_id)
        if old.status != "active":
            raise MemoryStoreError(f"memory {old_id} is {old.status}, only an active memory can be superseded")
        if isinstance(new, dict):
            arguments = {"persona": old.persona, "subject": old.subject, "attribute": old.attribute, **new}
            replacement, _ = self.add(**arguments)
        else:
            replacement = self.get(int(new))
        if replacement.id == old.id:
            raise MemoryStoreError(f"memory {old_id} cannot supersede itself")
        if replacement.persona != old.persona:
            raise MemoryStoreError("a memory can only be superseded by one of the same persona")
        now = _now()
        with self.database.connect() as conn:
            conn.execute(
                "UPDATE memories SET status = 'superseded', superseded_by = ?, valid_to = ?, "
                "consolidation = CASE consolidation WHEN 'pending' THEN 'excluded' ELSE consolidation END, "
                "updated_at = ? WHERE id = ? AND status = 'active'",
                (replacement.id, max(replacement.valid_from, old.valid_from), now, old.id))
            self._bump(conn, old.persona)
        return self.get(replacement.id)

    def forget(self, memory_id: int) -> MemoryRecord:
        """Take a memory out of recall and out of the next consolidation; keep a tombstone (id,
        fingerprint, dates) with its words erased, so nothing brings it back by accident."""
        memory = self.get(memory_id)
        if memory.status == "forgotten":
            return memory
        now = _now()
        with self.database.connect() as conn:
            conn.execute(
                "UPDATE memories SET status = 'forgotten', consolidation = 'excluded', text = '', fact = NULL, "
                "context = '', value = NULL, valid_to = COALESCE(valid_to, ?), updated_at = ? WHERE id = ?",
                (now, now, memory_id))
            self._bump(conn, memory.persona)
        self._delete_vectors([memory_id])
        self._tokens.delete([memory_id])
        return self.get(memory_id)

    def mark_consolidated(self, ids: Iterable[int], adapter_id: str) -> int:
        """Record that these memories were trained into ``adapter_id``; forgotten or superseded ones
        are left alone (they must not be marked as learned). Returns how many were marked."""
        ids = [int(i) for i in ids]
        if not adapter_id:
            raise MemoryStoreError("mark_consolidated needs an adapter id")
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        with self.database.connect() as conn:
            cursor = conn.execute(
                f"UPDATE memories SET consolidation = 'consolidated', adapter_id = ?, updated_at = ? "
                f"WHERE id IN ({marks}) AND status = 'active'", (adapter_id, _now(), *ids))
            for (persona,) in conn.execute(f"SELECT DISTINCT persona FROM memories WHERE id IN ({marks})", ids):
                self._bump(conn, persona)
        return int(cursor.rowcount)

    def count(self, name: str, persona: str = "default", amount: int = 1) -> None:
        """Add to a named counter (extraction failures and the like); shown by :meth:`stats`."""
        with self.database.connect() as conn:
            conn.execute("INSERT INTO memory_counters(persona, name, count) VALUES (?, ?, ?) "
                         "ON CONFLICT(persona, name) DO UPDATE SET count = count + excluded.count",
                         (persona, name, amount))

    def _bump(self, conn, persona: str) -> None:
        conn.execute("INSERT INTO memory_revisions(persona, revision) VALUES (?, 1) "
                     "ON CONFLICT(persona) DO UPDATE SET revision = revision + 1", (persona,))

    # ------------------------------------------------------------------ reading
    def get(self, memory_id: int) -> MemoryRecord:
        row = self._conn.execute("SELECT * FROM memories WHERE id = ?", (int(memory_id),)).fetchone()
        if row is None:
            raise MemoryStoreError(f"no memory {memory_id}")
        return _record(row)

    def list(self, persona: str | None = "default", *, status: str | Iterable[str] | None = "active",
             kind: str | None = None, limit: int | None = None, offset: int = 0) -> list[MemoryRecord]:
        """Memories newest first. ``persona`` None = every persona; ``status`` None = any."""
        where, args = [], []
        if persona is not None:
            where.append("persona = ?")
            args.append(persona)
        if status is not None:
            statuses = [status] if isinstance(status, str) else list(status)
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            args.extend(statuses)
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        sql = "SELECT * FROM memories" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY valid_from DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            args.extend([int(limit), int(offset)])
        return [_record(row) for row in self._conn.execute(sql, args)]

    def personas(self) -> list[str]:
        return [row[0] for row in self._conn.execute("SELECT DISTINCT persona FROM memories ORDER BY persona")]

    def by_attribute(self, persona: str, subject: str, attribute: str) -> list[MemoryRecord]:
        """Active memories giving a value for ``subject``'s ``attribute`` (what a new value contradicts)."""
        rows = self._conn.execute(
            "SELECT * FROM memories WHERE persona = ? AND subject = ? AND attribute = ? AND status = 'active' "
            "ORDER BY valid_from DESC", (persona, _lower(subject), _lower(attribute)))
        return [_record(row) for row in rows]

    def history(self, memory_id: int) -> list[MemoryRecord]:
        """Every version of this memory, oldest first: what it superseded, and what superseded it."""
        chain = [self.get(memory_id)]
        seen = {chain[0].id}
        while True:  # back: the memory that this one replaced
            row = self._conn.execute("SELECT * FROM memories WHERE superseded_by = ? ORDER BY id DESC LIMIT 1",
                                     (chain[0].id,)).fetchone()
            if row is None or row["id"] in seen:
                break
            seen.add(row["id"])
            chain.insert(0, _record(row))
        while chain[-1].superseded_by is not None and chain[-1].superseded_by not in seen:
            nxt = self.get(chain[-1].superseded_by)
            seen.add(nxt.id)
            chain.append(nxt)
        return chain

    def consolidation_set(self, persona: str = "default") -> list[MemoryRecord]:
        """What the next consolidation trains on: active memories, pending or already consolidated
        (a new adapter must keep the old ones), oldest first. Forgotten and superseded ones never."""
        rows = self._conn.execute(
            "SELECT * FROM memories WHERE persona = ? AND status = 'active' "
            "AND consolidation IN ('pending', 'consolidated') ORDER BY valid_from, id", (persona,))
        return [_record(row) for row in rows]

    def stats(self) -> dict[str, Any]:
        """Counts per persona, kind, status and consolidation state, plus the named counters
        (``extraction_failed``, ``extraction_constrained``, ``extraction_raw`` ...)."""
        result: dict[str, Any] = {"total": 0, "personas": {}}
        for row in self._conn.execute(
                "SELECT persona, kind, status, consolidation, COUNT(*) AS n FROM memories "
                "GROUP BY persona, kind, status, consolidation"):
            persona = result["personas"].setdefault(row["persona"], {
                "total": 0, "kind": {}, "status": {}, "consolidation": {}, "counters": {}})
            persona["total"] += row["n"]
            result["total"] += row["n"]
            for key in ("kind", "status", "consolidation"):
                persona[key][row[key]] = persona[key].get(row[key], 0) + row["n"]
        counters: dict[str, int] = {}
        for row in self._conn.execute("SELECT persona, name, count FROM memory_counters"):
            persona = result["personas"].setdefault(row["persona"], {
                "total": 0, "kind": {}, "status": {}, "consolidation": {}, "counters": {}})
            persona["counters"][row["name"]] = row["count"]
            counters[row["name"]] = counters.get(row["name"], 0) + row["count"]
        result["counters"] = counters
        return result

    # ------------------------------------------------------------------ export / import
    def export(self, persona: str = "default") -> dict[str, Any]:
        """Every memory of a persona (history and tombstones included) as a JSON-ready dict."""
        memories = self.list(persona, status=None)
        memories.sort(key=lambda m: m.id)
        keep = ("id", "kind", "text", "fact", "context", "subject", "attribute", "value", "fingerprint",
                "source_session", "source_message", "created_at", "valid_from", "valid_to", "superseded_by",
                "status", "consolidation", "adapter_id")
        return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "persona": persona, "exported_at": _now(),
                "memories": [{key: getattr(m, key) for key in keep} for m in memories]}

    def import_(self, data: dict[str, Any] | str, *, persona: str | None = None) -> dict[str, int]:
        """Load an export (a dict, or its JSON text) into ``persona`` (default: the file's). Checked
        first, whole: a bad file changes nothing and raises :class:`MemoryStoreError` naming the problem.
        Memories already present (same fingerprint, active or forgotten) are skipped; supersession
        links inside the file are kept. Returns counts: added, skipped, tombstones."""
        if isinstance(data, str | bytes):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise MemoryStoreError(f"not a memory export: invalid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(data, dict):
            raise MemoryStoreError("not a memory export: expected a JSON object with 'format', 'persona' and 'memories'")
        try:
            parsed = ExportFile.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors()[:5])
            raise MemoryStoreError(f"not a valid memory export: {problems}") from None
        persona = _check_persona(persona or parsed.persona)
        for number, item in enumerate(parsed.memories):
            if item.status != "forgotten" and not (item.text or item.fact):
                raise MemoryStoreError(f"not a valid memory export: memories.{number}: a memory needs text or fact")
        counts = {"added": 0, "skipped": 0, "tombstones": 0}
        new_ids: dict[int, int] = {}
        now = _now()
        with self.database.connect() as conn:
            for item in parsed.memories:
                print_ = item.fingerprint if item.status == "forgotten" and item.fingerprint else fingerprint(
                    item.fact or item.text)
                existing = conn.execute(
                    "SELECT id FROM memories WHERE persona = ? AND fingerprint = ? AND status = ? LIMIT 1",
                    (persona, print_, item.status)).fetchone()
                if existing is None and item.status == "active":
                    existing = conn.execute(
                        "SELECT id FROM memories WHERE persona = ? AND fingerprint = ? AND status = 'forgotten' "
                        "LIMIT 1", (persona, print_)).fetchone()
                if existing is not None:
                    counts["skipped"] += 1
                    if item.id is not None:
                        new_ids[item.id] = existing["id"]
                    continue
                forgotten = item.status == "forgotten"
                cursor = conn.execute(
                    "INSERT INTO memories(persona, kind, text, fact, context, subject, attribute, value, fingerprint, "
                    "source_session, source_message, created_at, valid_from, valid_to, status, consolidation, "
                    "adapter_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (persona, item.kind, "" if forgotten else (item.text or item.fact or ""),
                     None if forgotten or item.kind == "turn" else (item.fact or item.text),
                     "" if forgotten else item.context, _lower(item.subject), _lower(item.attribute),
                     None if forgotten else item.value, print_,
                     # Session ids point into the exporting machine's chat store: meaningless here.
                     None, None, item.created_at or now, item.valid_from or item.created_at or now, item.valid_to,
                     item.status, "excluded" if item.status != "active" else "pending", None, now))
                if item.id is not None:
                    new_ids[item.id] = int(cursor.lastrowid or 0)
                counts["tombstones" if forgotten else "added"] += 1
            for item in parsed.memories:  # supersession links, now that every id is known
                if item.superseded_by is not None and item.id in new_ids and item.superseded_by in new_ids:
                    conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL",
                                 (new_ids[item.superseded_by], new_ids[item.id]))
            self._bump(conn, persona)
        return counts

    # ------------------------------------------------------------------ search
    def search(self, query: str, persona: str = "default", k: int = 5, *, kinds: Iterable[str] | None = None,
               mode: str = "hybrid") -> list[MemoryHit]:
        """Hybrid search (BM25 + vectors, fused) over the persona's active memories, facts and raw
        turns alike; each memory is indexed with its context (speaker, date, neighbouring turns)."""
        if not query.strip() or k <= 0:
            return []
        index = self._index(persona)
        if not len(index.index):
            return []
        vector = query_tokens = None
        if mode != "bm25" and index.has_vectors:
            if self.token_matching and hasattr(self.embedder, "encode_query_tokens"):
                vector, query_tokens = self.embedder.encode_query_tokens(query)  # one forward pass for both
            else:
                vector = self.embedder.encode_query(query)
        wanted = set(kinds) if kinds is not None else None
        depth = k if wanted is None else max(4 * k, 50)
        hits = []
        for hit in index.index.search(query, vector, k=depth, mode=mode if vector is not None else "bm25"):
            memory = index.records[int(hit.chunk_id)]
            if wanted is not None and memory.kind not in wanted:
                continue
            hits.append(MemoryHit(memory=memory, score=hit.score, scores=dict(hit.scores)))
            if len(hits) >= k:
                break
        if query_tokens is not None and hits:
            for hit, match in zip(hits, self.token_matches(query_tokens, [h.memory for h in hits]), strict=True):
                hit.token_match = match
        return hits

    def _revision(self, persona: str) -> int:
        row = self._conn.execute("SELECT revision FROM memory_revisions WHERE persona = ?", (persona,)).fetchone()
        return int(row[0]) if row else 0

    def snapshot(self, persona: str) -> _PersonaIndex:
        """The persona's active memories as search sees them (records, index): the same object
        until a write bumps the persona's revision, so callers may cache what they derive from it
        (recall keys its name patterns on it)."""
        return self._index(persona)

    def _index(self, persona: str) -> _PersonaIndex:
        """The persona's search index, brought up to date when a write (from any process) bumped
        its revision: extended by the new memories when the write only added some, else rebuilt."""
        revision = self._revision(persona)
        model = self.embedder_name
        with self._lock:
            cached = self._indexes.get(persona)
            if cached is not None and cached[0] == revision and cached[1] == model:
                return cached[2]
            index = None
            if cached is not None and cached[1] == model and self.incremental_index:
                index = self._extended_index(persona, cached[2])
            if index is None:
                index = self._build_index(persona)
            self._indexes[persona] = (revision, model, index)
            return index

    def _build_index(self, persona: str) -> _PersonaIndex:
        import numpy as np

        from localqwen.retrieval.search import SearchIndex

        memories = sorted(self.list(persona), key=lambda m: m.id)  # oldest first: new ones append
        texts = [index_text(m) for m in memories]
        vectors = self._vectors_for(memories) if self._embedder_loader is not None else None
        if vectors is None:
            vectors = np.zeros((len(memories), 1), dtype=np.float32)
        index = SearchIndex(texts, vectors, chunk_ids=[str(i) for i in range(len(memories))], tokenizer=self._tokenizer,
                            bm25_backend="growing")
        return _PersonaIndex(index=index, records=memories, has_vectors=self._embedder_loader is not None)

    def _extended_index(self, persona: str, old: _PersonaIndex) -> _PersonaIndex | None:
        """``old`` with the memories added since it was built appended, or None when anything else
        changed (a memory forgotten, superseded or marked consolidated: those rebuild). A chat turn
        only adds, so this is what follows nearly every write: it costs what the new memories
        cost, where a rebuild costs the whole persona (bench_memory_write_search.py)."""
        import numpy as np

        rows = self._conn.execute("SELECT id, updated_at, consolidation FROM memories WHERE persona = ? AND "
                                  "status = 'active' ORDER BY id", (persona,)).fetchall()
        kept = old.records
        if len(rows) < len(kept) or any((row[0], row[1], row[2]) != (m.id, m.updated_at, m.consolidation)
                                        for row, m in zip(rows, kept, strict=False)):
            return None
        if len(rows) == len(kept):
            return old
        last = kept[-1].id if kept else -1
        added = [_record(row) for row in self._conn.execute(
            "SELECT * FROM memories WHERE persona = ? AND status = 'active' AND id > ? ORDER BY id", (persona, last))]
        if len(kept) + len(added) != len(rows):  # a write landed between the two reads: start over
            return None
        vectors = self._vectors_for(added) if self._embedder_loader is not None else \
            np.zeros((len(added), 1), dtype=np.float32)
        index = old.index.extended([index_text(m) for m in added], vectors,
                                   chunk_ids=[str(i) for i in range(len(kept), len(kept) + len(added))])
        return _PersonaIndex(index=index, records=kept + added, has_vectors=old.has_vectors)

    # ------------------------------------------------------------------ vectors
    @property
    def embedder(self) -> Embedder:
        if self._embedder_loader is None:
            raise MemoryStoreError("this memory store has no embedder (BM25 search only)")
        if self._embedder is None:
            self._embedder = self._embedder_loader()
        return self._embedder

    @property
    def embedder_name(self) -> str:
        if self._embedder_loader is None:
            return ""
        return self.embedder.name

    def embeddings(self, ids: Iterable[int], embedder: Embedder | None = None) -> np.ndarray:
        """The vectors of these memories (in order), embedding any not stored yet; for the memory head,
        whose keys may come from another ``embedder`` than search reads with (kept per embedder)."""
        memories = [self.get(i) for i in ids]
        return self._vectors_for(memories, embedder)

    def _table(self):
        import pyarrow as pa

        return open_or_create(self.vectors_dir, VECTOR_TABLE, [
            pa.field("memory_id", pa.int64()), pa.field("model", pa.string()), pa.field("fingerprint", pa.string()),
            pa.field("vector", pa.list_(pa.float32()))])

    def _stored_vectors(self, model: str) -> dict[tuple[int, str], np.ndarray]:
        import numpy as np

        table = self._table()
        if table is None:
            return {}
        data = table.to_arrow().to_pydict()
        found = {}
        for memory_id, row_model, print_, vector in zip(data["memory_id"], data["model"], data["fingerprint"],
                                                        data["vector"], strict=True):
            if row_model == model:
                found[(int(memory_id), print_)] = np.asarray(vector, dtype=np.float32)
        return found

    def _vectors_for(self, memories: list[MemoryRecord], embedder: Embedder | None = None) -> np.ndarray:
        """Vectors for these memories from LanceDB, embedding (and storing) the missing ones; by the
        store's embedder (with its token vectors) unless another ``embedder`` is given."""
        import numpy as np

        own = embedder is None  # another embedder's vectors are kept without token vectors
        embedder = self.embedder if embedder is None else embedder
        with self._lock:
            stored = self._vector_cache.get(embedder.name)
            missing = [m for m in memories if stored is None or (m.id, m.fingerprint) not in stored]
            if stored is None or len(missing) > 16:  # first use, or another process added many: read the table
                stored = self._vector_cache[embedder.name] = self._stored_vectors(embedder.name)
                missing = [m for m in memories if (m.id, m.fingerprint) not in stored]
        if missing:
            if own and hasattr(embedder, "encode_with_tokens"):  # the token vectors come from the same forward pass
                fresh = self._embed_with_tokens(missing)
            else:
                fresh = embedder.encode([index_text(m) for m in missing])
            for memory, vector in zip(missing, fresh, strict=True):
                stored[(memory.id, memory.fingerprint)] = vector
            self._write_vectors(embedder.name, missing, fresh)
        if not memories:
            return np.zeros((0, embedder.dimension), dtype=np.float32)
        return np.stack([stored[(m.id, m.fingerprint)] for m in memories])

    def token_matches(self, query_tokens: np.ndarray, memories: list[MemoryRecord]) -> list[np.ndarray]:
        """For each memory, each query token's best cosine among the memory's own words. Token vectors
        missing from the table are computed (and stored): memories embedded before word-by-word
        matching existed get theirs the first time they are candidates."""
        import numpy as np

        embedder = self.embedder
        keys = [(m.id, m.fingerprint) for m in memories]
        matrix, spans = self._tokens.get(embedder.name, embedder.dimension, keys)
        missing = list({key: m for m, key in zip(memories, keys, strict=True) if key not in spans}.values())
        if missing:
            self._embed_with_tokens(missing)
            matrix, spans = self._tokens.get(embedder.name, embedder.dimension, keys)
        similarities = query_tokens @ matrix.T
        empty = np.zeros(len(query_tokens), dtype=np.float32)
        return [similarities[:, start:end].max(axis=1) if end > start else empty
                for start, end in (spans.get(key, (0, 0)) for key in keys)]

    def _embed_with_tokens(self, memories: list[MemoryRecord]) -> np.ndarray:
        """Embed these memories as search sees them (``index_text``), keep and store the token
        vectors of their own words (the statement that text starts with); returns the sentence vectors."""
        embedder = self.embedder
        vectors, tokens = embedder.encode_with_tokens([index_text(m) for m in memories],
                                                      [embedder.leading_pieces(m.statement) for m in memories])
        self._tokens.put(embedder.name, [(m.id, m.fingerprint) for m in memories], tokens)
        return vectors

    def _write_vectors(self, model: str, memories: list[MemoryRecord], vectors: np.ndarray) -> None:
        table = self._table()
        if table is None:
            return
        rows = [{"memory_id": m.id, "model": model, "fingerprint": m.fingerprint, "vector": v.tolist()}
                for m, v in zip(memories, vectors, strict=True)]
        try:
            table.add(rows)
        except Exception:  # noqa: BLE001 - a cache: a failed write (a concurrent commit) is redone next search
            return
        self._appends += 1
        if self._appends >= self.compact_after_appends and not (self.compaction and self.compaction.is_alive()):
            self._appends = 0
            # on a thread of its own: these appends happen in the recall a chat turn waits for. A
            # process that exits mid-way leaves at most unreferenced files (a commit is atomic).
            self.compaction = threading.Thread(target=self._compact, args=(table, self._tokens.table()),
                                               name="memory-vectors-compaction", daemon=True)
            self.compaction.start()

    @staticmethod
    def _compact(*tables) -> None:
        """Merge the tables' small fragments and drop their old versions (see COMPACT_AFTER_APPENDS);
        the token vectors are appended with the sentence vectors, so they are compacted with them."""
        from datetime import timedelta

        for table in tables:
            try:
                table.optimize(cleanup_older_than=timedelta(seconds=COMPACT_KEEP_VERSIONS_FOR_S))
            except Exception:  # noqa: BLE001 - a concurrent commit won; the next compaction merges what is left
                continue

    def _delete_vectors(self, ids: list[int]) -> None:
        if self.vectors_dir is None or not (self.vectors_dir / f"{VECTOR_TABLE}.lance").exists():
            return
        table = self._table()
        table.delete(f"memory_id IN ({', '.join(str(int(i)) for i in ids)})")

    def rebuild_vectors(self) -> int:
        """Drop the vector table and embed every active memory again from SQLite. Returns the count."""
        import lancedb

        if self.vectors_dir is not None and self.vectors_dir.exists():
            db = lancedb.connect(str(self.vectors_dir))
            if VECTOR_TABLE in db.table_names():
                db.drop_table(VECTOR_TABLE)
        self._tokens.drop()
        with self._lock:
            self._indexes.clear()
            self._vector_cache.clear()
        memories = self.list(None)
        if self._embedder_loader is not None:
            self._vectors_for(memories)
        return len(memories)


@dataclass
class _PersonaIndex:
    index: SearchIndex
    records: list[MemoryRecord]
    has_vectors: bool


def index_text(memory: MemoryRecord) -> str:
    """What search sees for a memory: its statement, its words if they differ, and its context."""
    parts = [memory.statement]
    if memory.fact and memory.text and normalise(memory.text) != normalise(memory.fact):
        parts.append(memory.text)
    if memory.context:
        parts.append(memory.context)
    return "\n".join(parts)


def _record(row) -> MemoryRecord:
    return MemoryRecord(**dict(row))


def _lower(value: str | None) -> str | None:
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def _check_persona(persona: str) -> str:
    persona = (persona or "").strip()
    if not persona or len(persona) > 200:
        raise MemoryStoreError("a persona name must be 1 to 200 characters")
    return persona


def memory_embedder_name(configured: str | None = None) -> str:
    """The embedder memories are read with: the configured one, else the bundled bge-small-en-v1.5
    (``localqwen.retrieval.onnx_embedder``; on LoCoMo it ranks the evidence sessions better than
    MiniLM, README "Memory chat"), else, where that is not installed, the bundled MiniLM. Vectors
    are kept per embedder, so a change re-embeds the memories the first time they are searched."""
    from localqwen.retrieval.embeddings import DEFAULT_EMBEDDING_MODEL
    from localqwen.retrieval.onnx_embedder import BGE_SMALL, bundled_bge_folder

    if configured:
        return configured
    if bundled_bge_folder() is not None:
        return BGE_SMALL
    return DEFAULT_EMBEDDING_MODEL


def memory_embedder(ctx) -> Callable[[], Embedder]:
    """A loader of the plugin's embedder (its ``embedding_model`` setting, else the bundled
    default), shared through the context's device manager."""
    from localqwen.retrieval.embeddings import get_embedder

    name = memory_embedder_name((ctx.settings or {}).get("embedding_model") or None)
    return lambda: get_embedder(name, manager=ctx.device)


def open_store(ctx) -> MemoryStore:
    """The store for a plugin context: the app's database, vectors under the retrieval folder,
    the configured (or bundled) embedder shared through the device manager."""
    return MemoryStore(ctx.database, ctx.paths.data_dir / "retrieval" / "memory", embedder=memory_embedder(ctx))


__all__ = ["MemoryStoreError", "MemoryHit", "MemoryRecord", "MemoryStore", "fingerprint", "index_text",
           "memory_embedder", "memory_embedder_name", "normalise", "open_store"]
