"""A bulk write's checkpoint, on a thread of its own after its commit.

SQLite copies its log back into the database file inside the commit that takes the log past
WAL_AUTOCHECKPOINT_PAGES (engine/storage/sqlite_settings.py). A bulk write's commit takes it
far past: a 100k import logs ~270 MB of pages, and the copy took 1.3-1.8 s inside the commit,
under the home's write lock, with the writer waiting. So a bulk write's connection turns the
automatic checkpoint off, and after the commit this thread checkpoints on a connection of
its own, outside the lock, while the writer publishes its files and reports.

A checkpoint may stop at any moment (a crash, a kill) and be run again later: what was
committed stays in the log until it is copied. The thread is not a daemon, so a command
that ends meanwhile lets it finish before the process exits."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

from engine.storage.sqlite_settings import SQLITE_BUSY_TIMEOUT_MS


def checkpoint_later(database: Path | None) -> threading.Thread | None:
    """A thread copying the log of the SQLite file `database` into it (None: no file to
    checkpoint, e.g. not SQLite)."""
    if database is None:
        return None
    thread = threading.Thread(
        target=_checkpoint, args=(database,), name="gno-wal-checkpoint", daemon=False
    )
    thread.start()
    return thread


def _checkpoint(database: Path) -> None:
    # PASSIVE: copies what no reader still needs and never blocks a reader or a writer. If
    # another checkpoint runs, or the file cannot be opened, the next commit's checkpoint
    # (or the last connection's close) does the work instead: nothing to report.
    with contextlib.suppress(sqlite3.Error):
        # mode=rw: a database removed meanwhile is not made again, empty.
        connection = sqlite3.connect(
            f"{database.resolve().as_uri()}?mode=rw",
            uri=True,
            timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
        )
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            connection.close()
