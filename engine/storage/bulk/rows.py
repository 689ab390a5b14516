"""A bulk write's two halves beside its plan (engine/storage/bulk/__init__.py): the fact files,
created and renamed by name inside open folders, and the rows, inserted on a thread of their
own while the files are staged, committed once the files are durable."""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract.errors import MemoryFailure
from engine.retrieval.embeddings import embed_facts, vector_to_bytes
from engine.storage.bulk.stager_child import create_file
from engine.storage.crash_hook import CrashPoint, crash_at, crash_within
from engine.storage.embedded.sqlite_batch import InsertLogSuspended, insert_embeddings, insert_facts
from engine.storage.embedded.sqlite_settings import WAL_AUTOCHECKPOINT_PAGES, sqlite_file
from engine.storage.embedded.wal_checkpoint import checkpoint_later
from engine.storage.reads import chunks
from engine.storage.reads.records import (
    INSERT_EMBEDDING,
    INSERT_FACT,
    INSERT_FACT_SCOPES,
    stored_fact,
    stored_scopes,
)
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine

BATCH = 1000
# Batches of facts (and writes run between them) waiting for the inserts thread at most.
QUEUED_BATCHES = 2
_QUEUE_WAIT = 0.5  # seconds between looks at whether the inserts thread stopped


@dataclass
class PlannedFact:
    """A fact a bulk write will write: its row, its file and its vector."""

    row: Any  # a FactRow, or a namespace with its fields (records.row_fields)
    root: Path
    content: bytes  # the fact file, UTF-8
    block: Any = None  # the vector block, or None without a model


# Files created and renamed by name inside an open folder (openat, renameat) where the system
# allows it: a bulk write then pays no path lookup per file.
_BY_HANDLE = os.open in os.supports_dir_fd and os.replace in os.supports_dir_fd


class FactFolders:
    """The fact folders of one bulk write (made when first used), each opened once."""

    def __init__(self) -> None:
        self._handles: dict[Path, int] = {}

    def folders(self) -> set[Path]:
        return set(self._handles)

    def _handle(self, folder: Path) -> int:
        handle = self._handles.get(folder)
        if handle is None:
            folder.mkdir(parents=True, exist_ok=True)
            handle = self._handles[folder] = os.open(folder, os.O_RDONLY) if _BY_HANDLE else -1
        return handle

    def create(self, folder: Path, name: str, content: bytes) -> None:
        """A new file `name` in `folder` holding `content`; refused if the name exists."""
        create_file(self._handle(folder), folder, name, content)

    def move(self, folder: Path, target: Path, name: str, into: FactFolders) -> None:
        """Rename `name` from `folder` (one of these) to `target` (one of `into`'s)."""
        source, destination = self._handle(folder), into._handle(target)
        if _BY_HANDLE:
            os.replace(name, name, src_dir_fd=source, dst_dir_fd=destination)
        else:
            (folder / name).replace(target / name)

    def close(self) -> None:
        for handle in self._handles.values():
            if handle >= 0:
                os.close(handle)
        self._handles.clear()


class RowInserts:
    """A bulk write's rows (every row, its scopes, its vector, the predecessors it supersedes)
    inserted in one transaction on a thread of their own: SQLite does most of that work without
    holding the GIL, so it overlaps with the rest of the write. The facts come in batches
    (`feed`) as the write plans them, so the inserts start while later facts are still being
    planned and their files staged; `fed` says there are no more. The transaction commits in
    `commit`, once the files are durable, with what `also` prepares; or rolls back in
    `abandon`."""

    def __init__(
        self,
        engine: StoreEngine,
        planned: list[PlannedFact] | None = None,
        *,
        crash: CrashPoint = None,
    ) -> None:
        # The test hook's row points (engine/storage/crash_hook.py): `staged:N` fires once the
        # batch holding the N-th row is inserted in the open transaction. Given in the server
        # mode only (engine/storage/bulk/__init__.py), where the rows are the facts.
        self._crash = crash
        self._connection = engine.db.connect()
        self._cache_before = _widen_page_cache(self._connection)
        # The file to checkpoint after the commit (None: not SQLite, or not a plain file).
        self._sqlite_file = (
            sqlite_file(engine.db.url.render_as_string(hide_password=False))
            if self._cache_before is not None
            else None
        )
        self._session = Session(bind=self._connection, expire_on_commit=False)
        self._stop = threading.Event()  # set by `abandon`: the rows are not wanted any more
        # Bounded: a writer that plans faster than the rows go in waits, so that what waits
        # here (rows, vectors) stays a few batches however large the write.
        self._batches: queue.Queue[list[PlannedFact] | Callable[[Session], None] | None] = (
            queue.Queue(maxsize=QUEUED_BATCHES)
        )
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gno-bulk-rows")
        self._inserted = self._thread.submit(self._insert, engine)
        self._open = True
        if planned is not None:
            for batch in chunks(planned, BATCH):
                self.feed(batch)
            self.fed()

    def feed(self, batch: list[PlannedFact]) -> None:
        """More facts to insert, in the order they are to be written."""
        self._put(batch)

    def then(self, write: Callable[[Session], None]) -> None:
        """Run `write` on the transaction once the facts fed so far are in it."""
        self._put(write)

    def fed(self) -> None:
        """Every fact has been fed."""
        self._put(None)

    def _put(self, item: list[PlannedFact] | Callable[[Session], None] | None) -> None:
        """Queue `item`, waiting while the queue is full; if the inserts failed meanwhile,
        their error is raised here rather than waited on."""
        while True:
            try:
                self._batches.put(item, timeout=_QUEUE_WAIT)
                return
            except queue.Full:
                if self._inserted.done():
                    self._inserted.result()  # raises what stopped the inserts
                    raise RuntimeError("the bulk write's inserts stopped early") from None

    def _insert(self, engine: StoreEngine) -> None:
        session, inserted = self._session, 0
        rows: list[Any] = []  # those that supersede a fact, linked at the end
        embedder = engine.embedder_status.embedder
        one_statement = self._connection.dialect.name == "sqlite"
        suspended: InsertLogSuspended | None = None
        crash_at(self._crash, "staged", 0)
        while (batch := self._batches.get()) is not None:
            if self._stop.is_set():
                return
            if callable(batch):
                batch(session)
                continue
            _embed_missing(engine, batch)
            chunk = [item.row for item in batch]
            if one_statement:  # engine/storage/embedded/sqlite_batch.py says why
                connection = session.connection()
                if embedder is not None:
                    insert_embeddings(
                        connection,
                        embedder.model_id,
                        [
                            (item.row.record_id, item.row.content_hash, vector_to_bytes(item.block))
                            for item in batch
                        ],
                    )
                insert_facts(
                    connection, chunk, log_changes=bool(suspended and suspended.log_changes)
                )
                if suspended is None:  # the driver has begun the transaction now
                    suspended = InsertLogSuspended(connection)
                rows.extend(row for row in chunk if row.supersedes)  # for the links below
                continue
            if embedder is not None:
                # A vector left by a fact that reindex took out of the index would clash.
                session.execute(
                    delete(tables.EmbeddingRow).where(
                        col(tables.EmbeddingRow.record_id).in_(
                            [item.row.record_id for item in batch]
                        )
                    )
                )
                session.execute(
                    INSERT_EMBEDDING,
                    [
                        {
                            "record_id": item.row.record_id,
                            "model_id": embedder.model_id,
                            "content_hash": item.row.content_hash,
                            "vector": vector_to_bytes(item.block),
                        }
                        for item in batch
                    ],
                )
            # Values as the columns store them (JSON text, ISO times), inserted through a bare
            # table clause: SQLAlchemy's per-value type processing was most of the commit.
            session.execute(INSERT_FACT, [stored_fact(row) for row in chunk])
            scopes = [scope for row in chunk for scope in stored_scopes(row)]
            session.execute(INSERT_FACT_SCOPES, scopes)
            crash_within(self._crash, "staged", inserted, inserted + len(chunk))
            inserted += len(chunk)
            rows.extend(row for row in chunk if row.supersedes)  # for the links below
        if self._stop.is_set():  # abandoned: the write stops (the rollback restores all)
            return
        if suspended is not None:
            suspended.restore()
        _link_predecessors(session, rows)

    def commit(self, also: Callable[[], Callable[[Session], None]] | None) -> None:
        """Prepare what `also` writes while the inserts finish, wait for them (raising what
        failed them), then write that and commit."""
        try:
            write = also() if also is not None else None
            self._inserted.result()
            if write is not None:
                write(self._session)
            bump_generation(self._session)
            self._session.commit()
            checkpoint_later(self._sqlite_file)  # SQLite: the log copied back off this path
        finally:
            self._close()

    def abandon(self) -> None:
        """Roll back: nothing of this write reaches the index."""
        if not self._open:
            return
        self._stop.set()
        with contextlib.suppress(queue.Full):  # a full queue: the thread is not waiting
            self._batches.put_nowait(None)  # the thread may be waiting for a batch
        try:
            # The error that made the write stop is the caller's to report; here the thread
            # only has to be done before the connection closes.
            self._inserted.exception()
        finally:
            self._close()

    def _close(self) -> None:
        if self._open:
            self._open = False
            self._thread.shutdown(wait=True)
            self._session.close()  # rolls back whatever was not committed
            try:
                # A failed commit (a full disk) leaves the connection's transaction to be
                # rolled back before the connection takes another statement.
                if self._connection.in_transaction():
                    self._connection.rollback()
                if self._cache_before is not None:
                    self._connection.exec_driver_sql(f"PRAGMA cache_size={self._cache_before}")
                    self._connection.exec_driver_sql(
                        f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}"
                    )
            except Exception:  # noqa: BLE001 - it keeps the bulk settings: not given back
                self._connection.invalidate()
            finally:
                self._connection.close()


# SQLite's page cache for a bulk write's connection, in KiB (while it lasts; the connection's
# own size is put back after). The default 2 MiB is smaller than the facts table's dozen
# indexes over 100k rows, and each insert then read and evicted index pages again: with this,
# inserting the rows of a 100k import took 13 s instead of 19 here. Pages are taken only as
# they are used.
BULK_PAGE_CACHE_KIB = 256 * 1024


def _widen_page_cache(connection: Connection) -> int | None:
    """Widen a SQLite connection's page cache and turn its automatic checkpoint off (the
    commit's checkpoint runs after it, engine/storage/embedded/wal_checkpoint.py); the cache's size
    before (None: not SQLite)."""
    if connection.dialect.name != "sqlite":
        return None
    before = int(connection.exec_driver_sql("PRAGMA cache_size").scalar_one())
    connection.exec_driver_sql(f"PRAGMA cache_size=-{BULK_PAGE_CACHE_KIB}")
    connection.exec_driver_sql("PRAGMA wal_autocheckpoint=0")
    connection.commit()  # ends the transaction SQLAlchemy began: the session begins its own
    return before


def _link_predecessors(session: Session, rows: list[Any]) -> None:
    """Mark the predecessors named by the new facts as superseded (oldest successor first),
    as reindex derives it from the files. A predecessor that is superseded already (in the
    store, or by an earlier fact of this batch) would end with two current successors, a
    fork: the batch is refused instead (the caller's transaction rolls back)."""
    for successor in sorted(rows, key=lambda r: (r.created_at, r.record_id)):
        for uri in successor.supersedes:
            linked = session.execute(
                update(tables.FactRow)
                .where(col(tables.FactRow.uri) == uri)
                .where(col(tables.FactRow.superseded_by).is_(None))
                .values(superseded_by=successor.record_id, superseded_at=successor.created_at)
            )
            if getattr(linked, "rowcount", 0) == 0:
                holder = session.scalar(
                    select(col(tables.FactRow.superseded_by)).where(col(tables.FactRow.uri) == uri)
                )
                if holder is not None:
                    raise MemoryFailure(
                        "MEMORY_IMPORT_INVALID",
                        f"{successor.uri} supersedes {uri}, which {holder} supersedes already: "
                        "a fact has one successor. Drop one of the two supersedes links, or "
                        "import the later version as superseding the earlier. Nothing was "
                        "written.",
                    )


def _embed_missing(engine: StoreEngine, planned: list[PlannedFact]) -> None:
    """Vectors for the facts that came without one (all of them, unless an import's dedup
    embedded the texts already), in batches."""
    embedder = engine.embedder_status.embedder
    if embedder is None:
        return
    missing = [item for item in planned if item.block is None]
    for chunk in chunks(missing, BATCH):
        for item, block in zip(
            chunk, embed_facts(embedder, [i.row.text for i in chunk]), strict=True
        ):
            item.block = block
