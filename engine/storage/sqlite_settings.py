"""What every connection to a SQLite index is set to, in one place: the engine's connections
(engine/storage/database.py, through SQLAlchemy) and the cold CLI's plain sqlite3 reader
(engine/storage/sqlite_reader.py, which must not import SQLAlchemy) take them from here."""

from __future__ import annotations

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
