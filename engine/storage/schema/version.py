"""The index's schema version: checked at every open, migrated by Alembic when it lags.

An index carries the Alembic revision it was last migrated to (table `alembic_version`). At
open (MemoryEngine.prepare_schema) that is one query; when it is this gno-tui's HEAD nothing
else runs, and Alembic is not even imported (the CLI's cold start). Otherwise:

- no version table: a new database, or one made by a gno-tui from before Alembic; the
  baseline revision creates, or completes, today's schema (migrations/versions);
- an older revision this gno-tui knows: upgraded to HEAD;
- a revision it does not know: a newer gno-tui migrated the index. It is refused with
  MEMORY_QUERY_FAILED saying to upgrade gno-tui, before anything is changed.

Upgrades run under the home's write lock (the caller's) and, on PostgreSQL, under an advisory
lock too, since homes on several machines share one server database; inside it the revision
is read again, so a second process finds the work done. See docs/decisions.md, "Schema
migrations"."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import DBAPIError

from engine.contract.errors import MemoryFailure
from engine.storage.schema.database import is_unreadable_sqlite

if TYPE_CHECKING:
    from alembic.config import Config

# The newest revision in migrations/versions (tests/engine/test_migrations.py checks that it is
# Alembic's head): kept here so that the check at open needs no Alembic.
HEAD = "0004_partial_superseded_index"
VERSION_TABLE = "alembic_version"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# One advisory lock key for every process migrating this database.
ADVISORY_KEY = zlib.crc32(b"gno-tui:schema")


def stored_revision(db: Engine) -> str | None:
    """The index's revision, in one query; None when it has none (a new database, or one from
    a gno-tui before Alembic). A damaged SQLite file raises, for the caller to set aside."""
    try:
        with db.connect() as connection:
            return _read(connection)
    except DBAPIError as exc:
        if is_unreadable_sqlite(exc):
            raise
        if not inspect(db).has_table(VERSION_TABLE):
            return None
    # The table exists now: another process opening the same new index created it between
    # the two reads (four servers started at once on a new home hit this). Read it again.
    with db.connect() as connection:
        return _read(connection)


def _read(connection: Connection) -> str | None:
    value = connection.scalar(text(f"SELECT version_num FROM {VERSION_TABLE}"))
    return None if value is None else str(value)


def refuse_unknown(revision: str | None, db: Engine) -> None:
    """MEMORY_QUERY_FAILED when `revision` is none this gno-tui knows (a newer one made it)."""
    if revision is None or revision == HEAD or revision in known_revisions():
        return
    where = db.url.render_as_string(hide_password=True)
    raise MemoryFailure(
        "MEMORY_QUERY_FAILED",
        f"The index {where} is at schema revision {revision!r}, which this gno-tui "
        f"(schema {HEAD!r}) does not know: a newer gno-tui upgraded it. "
        "Upgrade gno-tui (pip install --upgrade gno-tui) on this machine to open it; "
        "nothing was changed.",
    )


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_config())
    return {revision.revision for revision in script.walk_revisions()}


def tables_missing(db: Engine) -> bool:
    """The index has none of the tables yet (a new database)."""
    return not inspect(db).has_table("facts")


def upgrade_to_head(db: Engine) -> list[str]:
    """Create or upgrade the index to HEAD, in one transaction; the notes of what was
    repaired on the way (the baseline's, for an index from before Alembic). The caller holds
    the home's write lock."""
    from alembic import command

    config = _config()
    notes: list[str] = []
    config.attributes["notes"] = notes
    with db.begin() as connection:
        # Homes that share one database have write locks of their own: the database orders
        # their migrations (held to the end of the transaction; the others wait, then find
        # the revision moved).
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_KEY})
        elif connection.dialect.name == "sqlite":
            # pysqlite would begin only at the first INSERT, leaving DDL outside the
            # transaction; IMMEDIATE takes the write lock now.
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        if inspect(connection).has_table(VERSION_TABLE):
            current = _read(connection)
            if current == HEAD:
                return notes  # another process upgraded it while this one waited
            refuse_unknown(current, db)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    return notes


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    # ConfigParser interpolates "%": a path holding one must not be read as a reference.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    return config
