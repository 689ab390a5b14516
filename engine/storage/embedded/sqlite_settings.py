"""What every connection to a SQLite index is set to, and how long a reader's own writes
wait, in one place: the engine's connections (engine/storage/schema/database.py, through SQLAlchemy)
and the cold CLI's plain sqlite3 reader (engine/storage/embedded/sqlite_reader.py, which must not
import SQLAlchemy) take them from here."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# How long a SQLite connection waits on another process's transaction before giving up.
SQLITE_BUSY_TIMEOUT_MS = 10_000

# SQLite copies its log back into the database file (a checkpoint) inside the commit that
# takes the log past this many pages, under the home's write lock: every other writer waits
# for it. A new fact touches ~26 pages, so SQLite's default of 1,000 made one write in ~38
# checkpoint; with 4,000 a checkpoint copies each page that many writes touch (the
# generation, the change log's last leaf, the indexes' hot leaves) once instead of four
# times, and a write held the lock 0.1 ms less on average (1.48 -> 1.34 ms, in process). The
# log file may grow to ~16 MB; SQLite removes it when the last connection closes.
WAL_AUTOCHECKPOINT_PAGES = 4000

# What a reader writes (a recall's receipt) waits at most this long for the database's write
# lock, instead of SQLITE_BUSY_TIMEOUT_MS: a writer holds it for a few milliseconds, a group
# commit or an import longer, and one stopped while it holds it (SIGSTOP, a debugger) for as
# long as it stays stopped. A reader must answer from what is committed without waiting for
# a writer's progress; what it could not write in time goes elsewhere (a receipt to the
# pending folder, engine/storage/embedded/receipt_spool.py) or is skipped (derived data). The busy
# handler sleeps 1, 2, 5, 10, 15, 20, 25 ms...: about eight tries in this time.
READER_WRITE_WAIT_MS = 100


@contextmanager
def busy_timeout(connection: sqlite3.Connection, wait_ms: int) -> Iterator[None]:
    """`connection` waits at most `wait_ms` for another connection's lock in the block (0: not
    at all), then SQLITE_BUSY_TIMEOUT_MS again."""
    connection.execute(f"PRAGMA busy_timeout={int(wait_ms)}")
    try:
        yield
    finally:
        connection.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")


def is_locked(error: BaseException | None) -> bool:
    """SQLite refused because another connection holds a lock (SQLITE_BUSY, SQLITE_LOCKED):
    "database is locked", as opposed to a damaged, read-only or missing file."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(error).lower()


_SQLITE = "sqlite:///"


def sqlite_url(path: Path) -> str:
    """The URL of the SQLite index at `path` (a home's database unless --db says otherwise)."""
    return f"{_SQLITE}{path}"


def sqlite_file(db_url: str) -> Path | None:
    """The file of a plain sqlite:///PATH URL, or None for any other database or URL form."""
    path = db_url.removeprefix(_SQLITE)
    if not db_url.startswith(_SQLITE) or not path or path.startswith(("file:", ":memory:")):
        return None
    return None if "?" in path else Path(path)
