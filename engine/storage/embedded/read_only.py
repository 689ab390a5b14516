"""How a home this process may not write is read (engine/storage/embedded/home.py says when): its
SQLite index opened only for reading, or an index built in memory from the fact files, and
reads that keep nothing.

The index is read with `mode=ro`, which sees a running writer's write-ahead log; where SQLite
cannot open it so (no `-shm` file beside it, and a folder it may not make one in), with
`immutable=1`: the file as it is, all of it, since a writer that closed cleanly left no log.
An index that cannot serve as it is (missing, at an older schema, empty while fact files
exist, unreadable) is replaced, for this process only, by one built in memory from the files
(MemoryEngine._prepare_read_only)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, ExceptionContext, create_engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import QueuePool, StaticPool

from engine.contract.errors import MemoryFailure
from engine.retrieval.snapshot import IndexedFact
from engine.storage.embedded.open_repairs import index_lags_files
from engine.storage.embedded.sqlite_settings import SQLITE_BUSY_TIMEOUT_MS
from engine.storage.reads.orm import OrmReads

if TYPE_CHECKING:
    from engine.storage.embedded.home_lock import HomeLock
    from engine.storage.mode import StoreEngine


class ReadOnlyReads(OrmReads):
    """OrmReads that write nothing. A recall's receipt is not kept (the home refuses writes,
        so presenting it to this home later is MEMORY_RECEIPT_INVALID); vectors a reader embeds
        are not kept (derived data); the store's identity, if the index never drew one, is None
    (the ranking index kept on disk then goes unused)."""

    def add_receipt(self, receipt: dict[str, Any], issued_at: datetime) -> None:
        return None

    def keep_vectors(
        self, model_id: str, facts: Sequence[IndexedFact], blocks: Sequence[Any]
    ) -> None:
        return None

    def store_identity(self) -> str | None:
        try:
            return super().store_identity()
        except (DBAPIError, MemoryFailure):  # none drawn and none can be stored: the copy
            return None  # kept on disk goes unused


# Why a reader of a brand-new home answers from memory: the process making it stopped while
# it held the write lock, before its index had tables (engine/storage/store.py).
CREATED_ELSEWHERE = "another process is creating this new home's index and holds its write lock"


def created_elsewhere(home: Path, index: Path, lock: HomeLock) -> str | None:
    """CREATED_ELSEWHERE when `home` is brand new (no collections.yaml), its index has no
    tables yet, and another process holds the write lock right now: a reader answers from an
    index built in memory (the home holds no fact yet) rather than wait for that process."""
    if (home / "collections.yaml").exists():
        return None
    if index.is_file():
        try:
            probe = sqlite3.connect(f"{index.as_uri()}?mode=ro", uri=True)
            try:
                tables = probe.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            finally:
                probe.close()
        except sqlite3.Error:
            return None  # the usual open says what is wrong with it
        if tables:
            return None
    if lock.acquire(0):
        lock.release()
        return None
    return CREATED_ELSEWHERE


def created_elsewhere_refusal(home: Path, lock: Path) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_WRITE_LEASE_BUSY",
        f"Another process is creating the new home {home} and holds its write lock ({lock}); "
        "nothing was written. Retry shortly; if no gno-tui is running, the lock file can be "
        "removed.",
    )


def read_only_index(path: Path) -> tuple[Engine, bool]:
    """An engine that only reads the SQLite file `path`, and whether it reads it `immutable`
    (no `-shm` to share with a writer, so SQLite may not open it `mode=ro`)."""
    uri = path.as_uri()
    immutable = False
    try:
        probe = sqlite3.connect(f"{uri}?mode=ro", uri=True)
        try:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            probe.close()
    except sqlite3.Error:
        immutable = True
    target = f"{uri}?immutable=1" if immutable else f"{uri}?mode=ro"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(
            target,
            uri=True,
            timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
            check_same_thread=False,
        )

    engine = create_engine("sqlite://", creator=connect, poolclass=QueuePool)
    event.listen(engine, "connect", _configure_reader)
    return engine, immutable


def memory_index() -> Engine:
    """A private index in memory, for a read-only home whose own index cannot serve: built
    from the fact files by this process and gone with it."""
    engine = create_engine(
        "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
    )
    event.listen(engine, "connect", _configure_memory)
    return engine


def refuse_writes(db: Engine, refusal: Callable[[], MemoryFailure]) -> None:
    """A write that reaches the database anyway, by a path that takes no write lock (queueing a
    proposal, say), is `refusal()` (MEMORY_HOME_READ_ONLY), not SQLite's "attempt to write a
    readonly database": the index is opened `query_only`, or sealed so once built."""

    def translate(context: ExceptionContext) -> None:
        original = context.original_exception
        code = getattr(original, "sqlite_errorcode", None)
        if isinstance(original, sqlite3.Error) and (
            (isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_READONLY)
            or "readonly database" in str(original)
        ):
            raise refusal() from None

    event.listen(db, "handle_error", translate)


def seal(db: Engine) -> None:
    """The index built in memory takes no more writes (its one connection, StaticPool's)."""
    with db.connect() as connection:
        connection.exec_driver_sql("PRAGMA query_only=ON")


def _configure_reader(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA query_only=ON")  # a second guard: the writes are refused before
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _configure_memory(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


# -- opening a read-only home ------------------------------------------------------------------


def prepare_read_only(engine: StoreEngine) -> None:
    """Open a home this process may not write: its index as it is, when it can serve; else an
    index built in memory from the fact files and collections.yaml (said in `notes`). Nothing
    is written, repaired or settled: that waits for a process that may write."""
    why = engine.memory_reason or _unusable(engine)
    if why is not None:
        _build_in_memory(engine, why)
    engine.relocate_roots()


def _unusable(engine: StoreEngine) -> str | None:
    """Why the home's own index cannot answer as it is, or None."""
    from engine.storage.schema import version as schema

    try:
        revision = schema.stored_revision(engine.db)
        if revision != schema.HEAD:
            schema.refuse_unknown(revision, engine.db)  # a newer gno-tui's: refused
            return "is from an older gno-tui" if revision else "has no tables"
        if not engine.collections_by_name():
            return "lists no collections"
        if index_lags_files(engine):
            return "is empty while fact files exist"
    except DBAPIError as exc:
        return f"cannot be read ({str(exc.orig).strip() or type(exc.orig).__name__})"
    return None


def _build_in_memory(engine: StoreEngine, why: str) -> None:
    from engine.storage.embedded.reindex import reindex_locked

    engine.use_database(memory_index(), persisted=False)
    with engine.building_in_memory():
        engine.prepare_schema()
        files = indexed = 0
        if index_lags_files(engine):
            with engine.write_lock(settle=False):
                report = reindex_locked(engine, None)
            files, indexed = report["files"], report["indexed"]
    seal(engine.db)
    refuse_writes(engine.db, engine.read_only_refusal)
    state = (
        "another process is creating this new home"
        if engine.read_only == CREATED_ELSEWHERE
        else "the home is read-only"
    )
    engine.note(
        f"{state} and its index {why}: answering from an index built in memory "
        f"from the fact files ({files} files, {indexed} facts indexed); nothing was written."
    )
