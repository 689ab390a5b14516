"""The embedded SQLite index read with the standard library's sqlite3, for the one verb of a
cold CLI call (a recall, a propose): importing SQLAlchemy, SQLModel and pydantic costs about
0.25 s, more than the whole of such a call otherwise (benchmarks/results/cli_cold.md).

`SqliteReads` answers StoreReads (engine/storage/reads/__init__.py) with the same statements the ORM
builds and decodes the columns as the table types do (UtcDateTime: ISO text; JSON: json text),
so the ranking index, recall and the fence cannot tell it from engine/storage/reads/orm.py
(tests/engine/test_read_path_equivalence.py runs both on one store). It writes what a recall
writes through the ORM, without the home's write lock, as the ORM path does: the receipt (one
upsert, committed before the result is printed; or, when a writer keeps the database locked
past READER_WRITE_WAIT_MS, a file in the pending folder, engine/storage/embedded/receipt_spool.py),
best effort and without waiting, vectors a reader embedded, and the store's id, drawn once.

`open_sqlite_store` opens it only for a home that needs nothing the full engine does at open:
the schema at this gno-tui's revision, collections.yaml in place, an index that does not lag
the fact files, no unfinished write or interrupted import, no damaged file. Anything else (and any
other database, or a $GNO_TUI_RETRIEVAL backend that cannot serve SQLite) returns None: the
caller opens MemoryEngine, which repairs, migrates or refuses exactly as before."""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import parse_iso, utc_now
from engine.retrieval.embeddings import EmbedderStatus, vector_to_bytes
from engine.retrieval.index_cache import SnapshotCache
from engine.retrieval.persisted import index_file
from engine.retrieval.registry import REGISTRY, Backend, Place, Registry
from engine.retrieval.seam import RetrievalIndex
from engine.retrieval.snapshot import IndexedFact
from engine.storage.embedded import receipt_spool
from engine.storage.embedded.sqlite_settings import (
    READER_WRITE_WAIT_MS,
    SQLITE_BUSY_TIMEOUT_MS,
    WAL_AUTOCHECKPOINT_PAGES,
    busy_timeout,
    is_locked,
    sqlite_file,
)
from engine.storage.reads import (
    IN_CHUNK,
    CollectionInfo,
    StoredVector,
    collection_named,
    public_receipt,
)

# Names the full engine defines in modules that load SQLAlchemy (engine/storage/schema/version.py,
# journal.py, bulk.py); tests/engine/test_read_path_open.py holds them equal.
SCHEMA_HEAD = "0004_partial_superseded_index"
JOURNAL_FOLDER = ".inflight"
STAGING_PREFIX = ".import-"
INDEX_FILE = "index.sqlite"
COLLECTIONS_FILE = "collections.yaml"
# As engine/storage/schema/database.py configures every SQLite connection of the ORM.
_PRAGMAS = (
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
    "PRAGMA journal_mode=WAL",  # a no-op: only sound homes, in WAL mode already, open here
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
    # Its receipts' commits checkpoint as rarely as the engine's (sqlite_settings.py).
    f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}",
)

_FACT_COLUMNS = ", ".join(field.name for field in fields(IndexedFact))
# The live facts (engine/contract/visibility.py): the index checks their expiry when asked.
_CURRENT = visibility.live_sql()


def _fact(row: tuple[Any, ...]) -> IndexedFact:
    """A row of _FACT_COLUMNS decoded as the ORM's column types do (UtcDateTime, JSON)."""
    (record_id, docid, uri, collection, text, content_hash, scopes) = row[:7]
    (caller, session, created_at, source, supersedes, expires_at) = row[7:]
    return IndexedFact(
        record_id=record_id,
        docid=docid,
        uri=uri,
        collection=collection,
        text=text,
        content_hash=content_hash,
        scopes=tuple(json.loads(scopes)),
        caller=caller,
        session=session,
        created_at=parse_iso(created_at),
        source=source,
        supersedes=tuple(json.loads(supersedes)),
        expires_at=None if expires_at is None else parse_iso(expires_at),
    )


_RECEIPT_UPSERT = (
    "INSERT INTO receipts (digest, caller, session, issued_at, memory_ids, span_hashes) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (digest) DO UPDATE SET caller = excluded.caller, "
    "session = excluded.session, issued_at = excluded.issued_at, "
    "memory_ids = excluded.memory_ids, span_hashes = excluded.span_hashes"
)


def _receipt_values(receipt: dict[str, Any]) -> tuple[str, ...]:
    """The receipts row of a receipt in its public shape: its issuedAt (iso_utc) is the
    column's stored text, as the ORM's UtcDateTime writes it."""
    return (
        receipt["digest"],
        receipt["caller"],
        receipt["session"],
        receipt["issuedAt"],
        json.dumps(list(receipt["memoryIds"])),
        json.dumps(list(receipt["spanHashes"])),
    )


def _database_file(connection: sqlite3.Connection) -> Path | None:
    """The file of the connection's main database (None in memory)."""
    for _seq, name, file in connection.execute("PRAGMA database_list"):
        if name == "main":
            return Path(file) if file else None
    return None


class SqliteReads:
    """StoreReads over one sqlite3 connection in autocommit mode: each statement reads what
    is committed, as each ORM session of engine/storage/reads/orm.py does. Its writes never
    wait for a writer longer than READER_WRITE_WAIT_MS
    (engine/storage/embedded/sqlite_settings.py)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection
        index = _database_file(connection)
        self._pending = receipt_spool.pending_folder(index) if index is not None else None

    def _meta(self, name: str) -> int | None:
        row = self._db.execute("SELECT value FROM store_meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    def generation(self) -> int:
        return self._meta("generation") or 0

    def store_identity(self) -> str | None:
        # Drawn once per database; the first process to draw it wins (as database.py's). Not
        # waited for: while a writer holds the database, the index copy goes unused instead.
        value = self._meta("store_id")
        if value is None:
            try:
                with busy_timeout(self._db, 0):
                    self._db.execute(
                        "INSERT OR IGNORE INTO store_meta (name, value) VALUES ('store_id', ?)",
                        (secrets.randbits(31),),
                    )
            except sqlite3.OperationalError as exc:
                if is_locked(exc):
                    return None
                raise
            value = self._meta("store_id")
        return "unknown" if value is None else str(value)

    def last_change(self) -> int:
        row = self._db.execute("SELECT max(seq) FROM fact_changes").fetchone()
        return int(row[0] or 0)

    def changes_since(self, seq: int, *, limit: int) -> list[tuple[int, str]] | None:
        # The rows before the horizon, as database.py's: a prune between the two is seen.
        found = self._db.execute(
            "SELECT seq, record_id FROM fact_changes WHERE seq > ? ORDER BY seq LIMIT ?",
            (seq, limit + 1),
        ).fetchall()
        if len(found) > limit or (self._meta("changes_pruned_to") or 0) > seq:
            return None
        return [(int(at), str(record_id)) for at, record_id in found]

    def _chunked(self, sql: str, ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """`sql` with `{ids}` standing for a list of bound ids, run per IN_CHUNK of them."""
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(ids), IN_CHUNK):
            chunk = list(ids[start : start + IN_CHUNK])
            marks = ", ".join("?" * len(chunk))
            rows.extend(self._db.execute(sql.format(ids=marks), chunk).fetchall())
        return rows

    def current_facts(self, record_ids: Sequence[str]) -> dict[str, IndexedFact]:
        sql = f"SELECT {_FACT_COLUMNS} FROM facts WHERE record_id IN ({{ids}}) AND {_CURRENT}"
        return {fact.record_id: fact for fact in map(_fact, self._chunked(sql, record_ids))}

    def all_current_facts(self) -> list[IndexedFact]:
        sql = f"SELECT {_FACT_COLUMNS} FROM facts WHERE {_CURRENT} ORDER BY created_at, record_id"
        return [_fact(row) for row in self._db.execute(sql)]

    def stored_vectors(self, model_id: str, record_ids: Sequence[str] | None) -> list[StoredVector]:
        sql = "SELECT record_id, content_hash, vector FROM embeddings WHERE model_id = ?"
        if record_ids is None:
            rows = self._db.execute(sql, (model_id,)).fetchall()
        else:
            rows = []
            for start in range(0, len(record_ids), IN_CHUNK):
                chunk = list(record_ids[start : start + IN_CHUNK])
                marks = ", ".join("?" * len(chunk))
                rows.extend(
                    self._db.execute(f"{sql} AND record_id IN ({marks})", [model_id, *chunk])
                )
        return [StoredVector(row[0], row[1], row[2]) for row in rows]

    def keep_vectors(
        self, model_id: str, facts: Sequence[IndexedFact], blocks: Sequence[Any]
    ) -> None:
        rows = [
            (fact.record_id, model_id, fact.content_hash, vector_to_bytes(block))
            for fact, block in zip(facts, blocks, strict=True)
        ]
        # Best effort, without waiting: a locked or read-only index must not break or hold up
        # a query (the vectors are derived data, embedded again next time).
        with suppress(sqlite3.Error), busy_timeout(self._db, 0), self._transaction():
            self._db.executemany(
                "INSERT INTO embeddings (record_id, model_id, content_hash, vector) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (record_id) DO UPDATE SET "
                "model_id = excluded.model_id, content_hash = excluded.content_hash, "
                "vector = excluded.vector",
                rows,
            )

    def collections(self) -> dict[str, CollectionInfo]:
        rows = self._db.execute(
            "SELECT name, root, policy, policy_source, policy_revision FROM collections"
        )
        return {row[0]: CollectionInfo(*row) for row in rows}

    def stored_receipt(self, digest: str) -> dict[str, Any] | None:
        row = self._db.execute(
            "SELECT caller, session, issued_at, memory_ids, span_hashes, digest FROM receipts "
            "WHERE digest = ?",
            (digest,),
        ).fetchone()
        if row is None:
            return None if self._pending is None else receipt_spool.find(self._pending, digest)
        caller, session, issued_at, memory_ids, span_hashes, stored_digest = row
        return public_receipt(
            caller=caller,
            session=session,
            issued_at=parse_iso(issued_at),
            memory_ids=json.loads(memory_ids),
            span_hashes=json.loads(span_hashes),
            digest=stored_digest,
        )

    def fact_texts(self, record_ids: Sequence[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(record_ids))
        sql = "SELECT record_id, text FROM facts WHERE record_id IN ({ids})"
        return {row[0]: row[1] for row in self._chunked(sql, ids)}

    def add_receipt(self, receipt: dict[str, Any], issued_at: datetime) -> None:
        # The ORM merges the row (same digest: same fields); an upsert is the same in one step.
        # receipt["issuedAt"] is iso_utc(issued_at), the column's stored text.
        try:
            with busy_timeout(self._db, READER_WRITE_WAIT_MS), self._transaction():
                self._db.execute(_RECEIPT_UPSERT, _receipt_values(receipt))
        except sqlite3.OperationalError as exc:
            if self._pending is None or not is_locked(exc):
                raise
            receipt_spool.keep(self._pending, receipt)  # stored; moved into the index later
            return
        self.store_pending_receipts()

    def store_pending_receipts(self) -> None:
        """Move the receipts waiting in the pending folder into the index; best effort and
        without waiting (they count as stored where they are)."""
        if self._pending is None:
            return
        found = receipt_spool.waiting(self._pending)
        if not found:
            return
        try:
            with busy_timeout(self._db, 0), self._transaction():
                self._db.executemany(
                    _RECEIPT_UPSERT, [_receipt_values(pending.receipt) for pending in found]
                )
        except sqlite3.Error:
            return  # left waiting for the next one
        receipt_spool.stored(found)

    def _transaction(self) -> Any:
        return _Transaction(self._db)


class _Transaction:
    """BEGIN ... COMMIT on an autocommit connection (ROLLBACK when the block raises)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:  # a statement refused as busy leaves it open
            self._db.execute("ROLLBACK")


class SqliteRecallStore:
    """RecallStore (engine/storage/reads/__init__.py) over SqliteReads: the collections, the clock,
    the embedder and the in-process ranking index, as MemoryEngine offers them to recall."""

    def __init__(
        self,
        home: Path,
        connection: sqlite3.Connection,
        embedder_status: EmbedderStatus,
        backend: Backend,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.home = home
        self.embedder_status = embedder_status
        self.reads = SqliteReads(connection)
        self._connection = connection
        self._clock = clock
        embedder = embedder_status.embedder
        path = index_file(home, embedder.model_id if embedder is not None else None)
        self._snapshots = SnapshotCache(self.reads, embedder, path)
        self._index = backend.open(Place("sqlite"), embedder, self._snapshots.get)

    def now(self) -> datetime:
        return self._clock()

    def collections_by_name(self) -> dict[str, CollectionInfo]:
        return self.reads.collections()

    def require_collection(self, name: str) -> CollectionInfo:
        return collection_named(self.collections_by_name(), name)

    def retrieval(self) -> RetrievalIndex:
        return self._index()

    def close(self) -> None:
        saving = self._snapshots.saving
        if saving is not None:
            saving.join()  # the index copy a rebuild writes, finished before the connection
        self._connection.close()


def _needs_full_engine(home: Path, connection: sqlite3.Connection) -> bool:
    """What MemoryEngine's open would do something about (see the module docstring)."""
    revision = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    if revision is None or revision[0] != SCHEMA_HEAD:
        return True  # a migration, or a refusal of a newer index
    if not (home / COLLECTIONS_FILE).is_file():
        return True  # rewritten from the index at open
    journal = home / JOURNAL_FOLDER
    if journal.is_dir() and any(journal.iterdir()):
        return True  # a write that did not finish: settled at open
    roots = [Path(row[0]) for row in connection.execute("SELECT root FROM collections")]
    if not roots:
        return True  # an index whose first open stopped before its collections: completed
    if connection.execute("SELECT 1 FROM facts LIMIT 1").fetchone() is None and any(
        next((root / "facts").glob("*/mem-*.md"), None) is not None for root in roots
    ):
        return True  # the index lags the files: opening rebuilds it
    # An import in progress or interrupted: left to the full engine. The temp files a crashed
    # atomic write leaves (`.tmp-*`) are not looked for: they change no answer, the next open
    # of the full engine (any write) removes them, and finding them means listing every fact
    # folder, which at 10k facts cost more than all the other checks together.
    return any(folder.is_dir() for root in roots for folder in root.glob(f"{STAGING_PREFIX}*"))


def open_sqlite_store(
    home: Path,
    *,
    db_url: str,
    embedder_status: Callable[[], EmbedderStatus],
    clock: Callable[[], datetime] = utc_now,
    backends: Registry = REGISTRY,
) -> SqliteRecallStore | None:
    """The sqlite3 store of `home` whose index `db_url` names, or None when the full engine
    must open it (see the module docstring). `embedder_status` loads the model, only once the
    store is known to serve."""
    choice = backends.chosen()  # an unknown choice is refused here as the engine refuses it
    try:
        backend = backends.choose(Place("sqlite"), choice)
    except MemoryFailure:  # not to be had on SQLite: the engine says so
        return None
    path = sqlite_file(db_url)
    if path is None or not path.is_file():
        return None
    try:
        connection = sqlite3.connect(
            path,
            timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error:
        return None
    try:
        for pragma in _PRAGMAS:
            connection.execute(pragma)
        if _needs_full_engine(home, connection):
            connection.close()
            return None
    except (sqlite3.Error, OSError):  # damaged, locked, not ours: the engine says or repairs
        connection.close()
        return None
    return SqliteRecallStore(home, connection, embedder_status(), backend, clock)
