"""Database engines for the index: SQLite in WAL by default, any SQLAlchemy URL on request."""

import secrets
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, delete, event, select, update
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.storage.embedded import wal_checkpoint
from engine.storage.embedded.sqlite_settings import SQLITE_BUSY_TIMEOUT_MS, WAL_AUTOCHECKPOINT_PAGES
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.embedded.sqlite_driver import DriverStatements


def sqlite_file_of(db: Engine) -> Path | None:
    """The SQLite file `db` works on, or None for another database (or an in-memory one)."""
    url = db.url
    name = url.database
    if url.get_backend_name() != "sqlite" or not name or name == ":memory:":
        return None
    if name.startswith("file:"):
        return None
    return Path(name)


def make_db_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and foreign keys on every connection."""
    try:
        if url.startswith("sqlite"):
            engine = create_engine(
                url,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            )
            event.listen(engine, "connect", _configure_sqlite)
            return engine
        if url.startswith("postgresql://"):
            # psycopg 3 is the driver we ship; plain postgresql:// would ask for psycopg2.
            url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
        if url.startswith("postgresql+psycopg://"):
            # Reconnects after a restart, coded errors for a server failing a call.
            from engine.storage.server.faults import postgres_engine

            return postgres_engine(url)
        return create_engine(url, pool_pre_ping=True)
    except Exception as exc:  # a malformed URL or a missing driver
        raise MemoryFailure(
            "MEMORY_QUERY_FAILED",
            f"Cannot open the index database {url!r}: {exc}. Pass a SQLAlchemy URL such as "
            "sqlite:///path/index.sqlite or postgresql://user@host/db.",
        ) from exc


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    _use_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    # Checkpoints out of most commits (sqlite_settings.py says why).
    cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
    # A log that a bulk write grew is cut back when it is next started again, instead of
    # keeping its largest size for as long as a connection is open (wal_checkpoint.py).
    cursor.execute(f"PRAGMA journal_size_limit={wal_checkpoint.WAL_SIZE_LIMIT_BYTES}")
    cursor.execute("PRAGMA foreign_keys=ON")
    # Statement journals in memory: a bulk import's inserts wrote them to temp files, 640k
    # small writes for 20k facts (78k in all now), none of them ever read back.
    cursor.execute("PRAGMA temp_store=MEMORY")
    cursor.close()


def _use_wal(cursor: sqlite3.Cursor) -> None:
    """Put the file in WAL mode (it stays so: only a new file's first connection changes it).
    SQLite answers that change with "database is locked" at once, without its busy handler,
    while another connection holds a lock on the file: four MCP servers started together on
    a new home had one of them exit (one open in twenty-five, raced in a test). So the change
    is tried again until the file is in WAL mode, for as long as any other lock is waited
    for."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")  # a database in memory stays "memory"
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.002)  # another connection's open or write: it takes milliseconds


# -- the change log ------------------------------------------------------------------------
# `fact_changes` is written by triggers on `facts`
# (engine/storage/schema/migrations/baseline_ops.py), inside the writing transaction: a reader
# applies exactly what changed since the last seq it saw (engine/retrieval/snapshot.py), and no
# write path can forget to log.


def last_change(session: Session) -> int:
    """The seq of the newest change (0 for none)."""
    from sqlalchemy import func

    return int(session.scalar(select(func.max(tables.FactChangeRow.seq))) or 0)


def changes_since(session: Session, seq: int, *, limit: int) -> list[tuple[int, str]] | None:
    """(seq, record id) of the changes after `seq`, oldest first; None when there are more than
    `limit` of them or the log no longer reaches back to `seq` (pruned): rebuild instead.
    The rows are read before the horizon: each statement reads what is committed then, and a
    prune committed between the two is seen by the second (read the other way round, the
    rows would lack the pruned changes and nothing would say so)."""
    found = session.execute(
        select(tables.FactChangeRow.seq, tables.FactChangeRow.record_id)
        .where(tables.FactChangeRow.seq > seq)
        .order_by(tables.FactChangeRow.seq)
        .limit(limit + 1)
    ).all()
    if len(found) > limit or pruned_through(session) > seq:
        return None
    return [(int(row.seq), str(row.record_id)) for row in found]


def pruned_through(session: Session) -> int:
    """The newest seq pruned from the log (0: none): a reader behind it rebuilds."""
    value = session.scalar(select(_META.c.value).where(_META.c.name == "changes_pruned_to"))
    return int(value or 0)


# The change log keeps this many rows by default (engine/storage/compaction.py prunes it,
# $GNO_TUI_CHANGES_KEPT changes it); a reader further behind rebuilds, once.
CHANGES_KEPT = 200_000


def prune_changes(session: Session, *, through: int) -> int:
    """Drop the changes up to seq `through` and record that the log no longer reaches back
    past it, in the caller's write transaction; how many were dropped."""
    removed = session.execute(
        delete(tables.FactChangeRow).where(tables.FactChangeRow.seq <= through)
    )
    row = session.get(tables.StoreMetaRow, "changes_pruned_to")
    if row is None:
        session.add(tables.StoreMetaRow(name="changes_pruned_to", value=through))
    else:
        row.value = max(row.value, through)
    return int(getattr(removed, "rowcount", 0) or 0)


def is_unreadable_sqlite(exc: BaseException) -> bool:
    """SQLite says the file is no database or is damaged (SQLITE_NOTADB, SQLITE_CORRUPT), as
    opposed to locked, missing or read-only."""
    orig = getattr(exc, "orig", exc)
    if not isinstance(orig, sqlite3.DatabaseError):
        return False
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    message = str(orig).lower()
    return "not a database" in message or "malformed" in message


def store_identity(engine: Engine) -> str:
    """A number drawn once per index database (store_meta `store_id`): what a copy of derived
    data (engine/retrieval/persisted.py) checks that it belongs to this database, and not to
    one that was deleted and rebuilt in its place."""
    from sqlalchemy.exc import IntegrityError

    for _attempt in range(2):
        with Session(engine) as session:
            row = session.get(tables.StoreMetaRow, "store_id")
            if row is not None:
                return str(row.value)
            session.add(tables.StoreMetaRow(name="store_id", value=secrets.randbits(31)))
            try:
                session.commit()
            except IntegrityError:  # another process drew it first: read theirs
                session.rollback()
    with Session(engine) as session:
        row = session.get(tables.StoreMetaRow, "store_id")
        return str(row.value) if row is not None else "unknown"


def read_generation(session: Session) -> int:
    row = session.get(tables.StoreMetaRow, "generation")
    return row.value if row else 0


def generation_of(db: Engine) -> int:
    """The generation, read on a connection of the pool without a session: every recall asks,
    and the ORM's identity-map lookup cost half a millisecond of a 10k-fact recall."""
    with db.connect() as connection:
        value = connection.execute(_READ_GENERATION).scalar()
    return int(value) if value is not None else 0


# Built once, through the Core table: a write runs it once per transaction, and the ORM's
# bulk-update path (autoflush, then syncing the objects in the session) cost it 0.3 ms.
_META = tables.StoreMetaRow.__table__
_READ_GENERATION = select(_META.c.value).where(_META.c.name == "generation")
_BUMP_GENERATION = update(_META).where(_META.c.name == "generation").values(value=_META.c.value + 1)


def bump_generation(session: Session, statements: "DriverStatements | None" = None) -> None:
    """Called inside every write transaction, so readers in other processes can see a change.
    `statements`: a group commit's, on SQLite's driver
    (engine/storage/embedded/sqlite_driver.py)."""
    if statements is not None:
        changed = statements.change(_BUMP_GENERATION)
    else:
        changed = session.connection().execute(_BUMP_GENERATION).rowcount
    if changed == 0:
        session.add(tables.StoreMetaRow(name="generation", value=1))
