"""The two ways the embedded index is opened (the engine's SQLAlchemy connections and the
cold CLI's plain sqlite3 reader) configure SQLite alike: a reader that wrote its receipts with
another checkpoint threshold or busy timeout would checkpoint inside its commits, or give up
on the write lock, where the engine does not."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.storage.embedded import sqlite_reader, sqlite_settings
from engine.storage.embedded.sqlite_settings import WAL_AUTOCHECKPOINT_PAGES
from engine.storage.schema import database


def _settings(connection: sqlite3.Connection) -> dict[str, object]:
    return {
        name: connection.execute(f"PRAGMA {name}").fetchone()[0]
        for name in ("busy_timeout", "wal_autocheckpoint", "synchronous", "foreign_keys")
    }


@pytest.mark.sqlite_only  # the SQLite connection's settings
def test_the_cold_reader_opens_the_index_as_the_engine_does(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    engine_connection = database.make_db_engine(sqlite_settings.sqlite_url(path)).raw_connection()
    try:
        engine_side = _settings(engine_connection.driver_connection)  # type: ignore[arg-type]
    finally:
        engine_connection.close()
    reader = sqlite3.connect(path)
    try:
        for pragma in sqlite_reader._PRAGMAS:
            reader.execute(pragma)
        reader_side = _settings(reader)
    finally:
        reader.close()
    assert reader_side == engine_side
    assert engine_side["wal_autocheckpoint"] == WAL_AUTOCHECKPOINT_PAGES
