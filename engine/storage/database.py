"""Database engines for the index: SQLite in WAL by default, any SQLAlchemy URL on request."""

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, select, text, update
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
