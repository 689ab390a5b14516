"""A bulk write's checkpoint, on a thread of its own after its commit.

SQLite copies its log back into the database file inside the commit that takes the log past
WAL_AUTOCHECKPOINT_PAGES (engine/storage/embedded/sqlite_settings.py). A bulk write's commit takes
it far past: a 100k import logs ~270 MB of pages, and the copy took 1.3-1.8 s inside the commit,
under the home's write lock, with the writer waiting. So a bulk write's connection turns the
automatic checkpoint off, and after the commit this thread checkpoints on a connection of
its own, outside the lock, while the writer publishes its files and reports.

A checkpoint may stop at any moment (a crash, a kill) and be run again later: what was
committed stays in the log until it is copied. The thread is not a daemon, so a command
that ends meanwhile lets it finish before the process exits.

The log file keeps its largest size while any connection is open (a server's are open for
days): 270 MB after a 100k import. Every engine connection sets journal_size_limit to
WAL_SIZE_LIMIT_BYTES (engine/storage/schema/database.py), so the first write that starts the log
again after a whole checkpoint cuts the file back to that size; the compaction
(engine/storage/compaction.py) checkpoints a log found past it (`checkpoint_now`)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

from engine.storage.embedded.sqlite_settings import SQLITE_BUSY_TIMEOUT_MS, WAL_AUTOCHECKPOINT_PAGES

# What the log file is cut back to: a quarter above the size it reaches between two
# automatic checkpoints (4 KiB pages, and the commit that crosses the mark), so ordinary
# writes neither cut it nor pay for the file growing again.
WAL_SIZE_LIMIT_BYTES = WAL_AUTOCHECKPOINT_PAGES * 4096 * 5 // 4


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


def checkpoint_now(database: Path) -> bool:
    """A checkpoint of the SQLite file `database`, on this thread: whether the whole log was
    copied (the next write then starts it again from the beginning)."""
    return _checkpoint(database)


def _checkpoint(database: Path) -> bool:
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
            busy, frames, copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            return not busy and frames == copied
        finally:
            connection.close()
    return False
