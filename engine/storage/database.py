"""Database engines for the index: SQLite in WAL by default, any SQLAlchemy URL on request."""

import secrets
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, delete, event, inspect, select, text, update
from sqlalchemy.orm import Session
from sqlmodel import SQLModel

from engine.contract.errors import MemoryFailure
from engine.storage import tables

# How long a SQLite connection waits on another process's transaction before giving up.
SQLITE_BUSY_TIMEOUT_MS = 10_000


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


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
        return create_engine(url, pool_pre_ping=True)
    except Exception as exc:  # a malformed URL or a missing driver
        raise MemoryFailure(
            "MEMORY_QUERY_FAILED",
            f"Cannot open the index database {url!r}: {exc}. Pass a SQLAlchemy URL such as "
            "sqlite:///path/index.sqlite or postgresql://user@host/db.",
        ) from exc


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def tables_missing(engine: Engine) -> bool:
    present = set(inspect(engine).get_table_names())
    return not {table.name for table in SQLModel.metadata.sorted_tables} <= present


def columns_missing(engine: Engine) -> bool:
    """An index made by an older gno-tui lacks columns added since (e.g. the keyed API's)."""
    inspector = inspect(engine)
    present = set(inspector.get_table_names())
    return any(
        {column.name for column in table.columns}
        > {column["name"] for column in inspector.get_columns(table.name)}
        for table in SQLModel.metadata.sorted_tables
        if table.name in present
    )


def create_tables(engine: Engine) -> None:
    SQLModel.metadata.create_all(engine)
    _add_missing_columns(engine)
    create_change_triggers(engine)


# -- the change log ------------------------------------------------------------------------
# Triggers on `facts` append the record id of every inserted, updated or deleted row to
# `fact_changes`, inside the writing transaction: a reader applies exactly what changed since
# the last seq it saw (engine/retrieval/snapshot.py), and no write path can forget to log.

CHANGE_TRIGGERS = ("fact_changes_on_insert", "fact_changes_on_update", "fact_changes_on_delete")
_SQLITE_TRIGGER = """CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON facts
BEGIN INSERT INTO fact_changes (record_id) VALUES ({row}.record_id); END"""
_POSTGRES_FUNCTION = """CREATE OR REPLACE FUNCTION log_fact_change() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO fact_changes (record_id) VALUES (OLD.record_id);
  ELSE
    INSERT INTO fact_changes (record_id) VALUES (NEW.record_id);
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql"""
_POSTGRES_TRIGGER = """CREATE OR REPLACE TRIGGER {name} AFTER {event} ON facts
FOR EACH ROW EXECUTE FUNCTION log_fact_change()"""
_EVENTS = (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))


def create_change_triggers(engine: Engine) -> None:
    with engine.begin() as connection:
        if engine.dialect.name == "sqlite":
            for name, (event_name, row) in zip(CHANGE_TRIGGERS, _EVENTS, strict=True):
                connection.execute(
                    text(_SQLITE_TRIGGER.format(name=name, event=event_name, row=row))
                )
        elif engine.dialect.name == "postgresql":
            connection.execute(text(_POSTGRES_FUNCTION))
            for name, (event_name, _row) in zip(CHANGE_TRIGGERS, _EVENTS, strict=True):
                connection.execute(text(_POSTGRES_TRIGGER.format(name=name, event=event_name)))


def change_triggers_missing(engine: Engine) -> bool:
    if engine.dialect.name == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
    elif engine.dialect.name == "postgresql":
        query = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
    else:
        return False
    with engine.connect() as connection:
        present = {row[0] for row in connection.execute(text(query))}
    return not set(CHANGE_TRIGGERS) <= present


def last_change(session: Session) -> int:
    """The seq of the newest change (0 for none)."""
    from sqlalchemy import func

    return int(session.scalar(select(func.max(tables.FactChangeRow.seq))) or 0)


def changes_since(session: Session, seq: int, *, limit: int) -> list[tuple[int, str]] | None:
    """(seq, record id) of the changes after `seq`, oldest first; None when there are more than
    `limit` of them or the log no longer reaches back to `seq` (pruned): rebuild instead."""
    pruned_to = session.get(tables.StoreMetaRow, "changes_pruned_to")
    if pruned_to is not None and pruned_to.value > seq:
        return None
    found = session.execute(
        select(tables.FactChangeRow.seq, tables.FactChangeRow.record_id)
        .where(tables.FactChangeRow.seq > seq)
        .order_by(tables.FactChangeRow.seq)
        .limit(limit + 1)
    ).all()
    if len(found) > limit:
        return None
    return [(int(row.seq), str(row.record_id)) for row in found]


# The change log keeps at least this many rows; a reader further behind rebuilds, once.
CHANGES_KEPT = 200_000


def prune_changes(session: Session) -> int:
    """Drop the oldest changes beyond CHANGES_KEPT (inside a write transaction); how many."""
    newest = last_change(session)
    cut = newest - CHANGES_KEPT
    if cut <= 0:
        return 0
    removed = session.execute(delete(tables.FactChangeRow).where(tables.FactChangeRow.seq <= cut))
    row = session.get(tables.StoreMetaRow, "changes_pruned_to")
    if row is None:
        session.add(tables.StoreMetaRow(name="changes_pruned_to", value=cut))
    else:
        row.value = max(row.value, cut)
    return int(getattr(removed, "rowcount", 0) or 0)


def _add_missing_columns(engine: Engine) -> None:
    """Additive upgrade in place: new nullable columns and their indexes (reindex fills them)."""
    inspector = inspect(engine)
    with engine.begin() as connection:
        for table in SQLModel.metadata.sorted_tables:
            have = {column["name"] for column in inspector.get_columns(table.name)}
            added = [column for column in table.columns if column.name not in have]
            for column in added:
                kind = column.type.compile(dialect=engine.dialect)
                connection.execute(
                    text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}')
                )
            if added:
                for index in table.indexes:
                    index.create(connection, checkfirst=True)


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


# The keyed API's uniqueness: one row per (namespace, key, revision), enforced by the database
# so that writers on different homes sharing one index (each under its own home's lock) cannot
# both create a key or a revision (docs/decisions.md, "Crash and corruption").
KEYED_INDEX = "ix_facts_kv_key"


def keyed_index_unique(engine: Engine) -> bool:
    """The facts table's keyed index is unique (an index made before it was is not)."""
    inspector = inspect(engine)
    if "facts" not in inspector.get_table_names():
        return False
    found = {index["name"]: index for index in inspector.get_indexes("facts")}
    return bool(found.get(KEYED_INDEX, {}).get("unique"))


def make_keyed_index_unique(engine: Engine) -> list[str]:
    """Upgrade an older index in place: where two rows hold one key's revision (the race the
    unique index now prevents), keep the one whose chain went on, else the earlier write,
    and take the others out of the index (their files stay; reindex lists them as forks).
    Then replace the plain index with the unique one. Returns a note per repaired key."""
    if keyed_index_unique(engine):
        return []
    facts = tables.FactRow.__table__
    notes: list[str] = []
    with engine.begin() as connection:
        clashes = connection.execute(
            select(facts.c.kv_namespace, facts.c.kv_key, facts.c.kv_revision)
            .where(facts.c.kv_key.is_not(None))
            .group_by(facts.c.kv_namespace, facts.c.kv_key, facts.c.kv_revision)
            .having(text("count(*) > 1"))
        ).all()
        dropped: list[str] = []
        for namespace, key, revision in clashes:
            rows = connection.execute(
                select(facts.c.record_id, facts.c.uri, facts.c.superseded_by, facts.c.created_at)
                .where(facts.c.kv_namespace == namespace)
                .where(facts.c.kv_key == key)
                .where(facts.c.kv_revision == revision)
            ).all()
            ranked = sorted(
                rows, key=lambda r: (r.superseded_by is None, r.created_at, r.record_id)
            )
            kept, others = ranked[0], ranked[1:]
            dropped.extend(row.record_id for row in others)
            notes.append(
                f"key {namespace}/{key} had {len(rows)} rows at revision {revision} (two live "
                "heads, from writers on two homes racing before the index enforced one key): "
                f"kept {kept.uri} (the earlier write), took "
                f"{', '.join(row.uri for row in others)} out of the index (the files stay; "
                "`gno-tui reindex --json` lists them under forks)."
            )
        if dropped:
            for table in (tables.FactScopeRow, tables.EmbeddingRow, tables.FactRow):
                connection.execute(delete(table).where(table.record_id.in_(dropped)))
            connection.execute(
                update(tables.StoreMetaRow)
                .where(tables.StoreMetaRow.name == "generation")
                .values(value=tables.StoreMetaRow.value + 1)
            )
        connection.execute(text(f"DROP INDEX IF EXISTS {KEYED_INDEX}"))
        index = next(ix for ix in facts.indexes if ix.name == KEYED_INDEX)
        index.create(connection)
    return notes


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


def bump_generation(session: Session) -> None:
    """Called inside every write transaction, so readers in other processes can see a change."""
    changed = session.execute(
        update(tables.StoreMetaRow)
        .where(tables.StoreMetaRow.name == "generation")
        .values(value=tables.StoreMetaRow.value + 1)
    )
    if getattr(changed, "rowcount", 0) == 0:
        session.add(tables.StoreMetaRow(name="generation", value=1))


def count_rows(session: Session, table: type[SQLModel]) -> int:
    from sqlalchemy import func

    return int(session.scalar(select(func.count()).select_from(table)) or 0)
