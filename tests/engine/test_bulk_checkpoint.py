"""A bulk write's log is copied back into the database file after its commit, off the
writer's path (engine/storage/embedded/wal_checkpoint.py): the file alone then holds the write, and
the connection the write used checkpoints as usual again for the writes after it."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from engine.storage.bulk import BulkFact, add_many
from engine.storage.embedded.sqlite_settings import WAL_AUTOCHECKPOINT_PAGES
from engine.storage.store import MemoryEngine

FACTS = 3_000


def _wait_for_checkpoints() -> None:
    for thread in threading.enumerate():
        if thread.name == "gno-wal-checkpoint":
            thread.join()


def _sqlite_file(engine: MemoryEngine) -> Path:
    if engine.db.dialect.name != "sqlite":
        pytest.skip("the log and its checkpoint are SQLite's")
    return Path(str(engine.db.url.database))


def test_after_a_bulk_write_the_database_file_alone_holds_it(engine, tmp_path):
    database = _sqlite_file(engine)
    facts = [
        BulkFact(text=f"Bulk fact number {n} about topic {n % 37}", scopes=["s"], caller="t",
                 session="s1")
        for n in range(FACTS)
    ]  # fmt: skip
    report = add_many(engine, facts, durable=False)
    assert len(report.added) == FACTS
    _wait_for_checkpoints()
    # The file without its log, as a copy taken now (or a backup of the .sqlite alone) has it.
    alone = tmp_path / "copy.sqlite"
    shutil.copyfile(database, alone)
    copy = sqlite3.connect(alone)
    try:
        assert copy.execute("SELECT count(*) FROM facts").fetchone() == (FACTS,)
    finally:
        copy.close()


def test_the_bulk_connection_checkpoints_as_usual_afterwards(engine):
    _sqlite_file(engine)
    add_many(engine, [BulkFact(text="One fact", scopes=["s"], caller="t", session="s1")])
    _wait_for_checkpoints()
    with engine.db.connect() as connection:
        setting = connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one()
    assert setting == WAL_AUTOCHECKPOINT_PAGES
