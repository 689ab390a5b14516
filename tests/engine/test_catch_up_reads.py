"""A catch-up reads the facts it is told of by their record ids, through the primary key.

With the liveness test in the same WHERE clause, SQLite answered an IN list of five ids or
more from ix_facts_superseded_by while that index held a NULL for every live fact (before
migration 0004): every catch-up read the whole store (0.33 s at 600k facts; 87 s for the
catch-up after a 100k import into it). The
planner makes that choice from the query alone (no statistics are kept), so the plan of the
statements each reader runs, on a small store, is the plan on a large one."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.embedded.sqlite_reader import SqliteReads
from engine.storage.reads.orm import OrmReads

pytestmark = pytest.mark.sqlite_only


def plan(connection: sqlite3.Connection, sql: str, params: Any) -> str:
    rows = connection.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
    return " / ".join(str(row[-1]) for row in rows)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    engine = open_engine(home=home, embedder_status=EmbedderStatus(None, "not needed here"))
    memory = MemoryService(engine)
    for n in range(12):
        memory.remember(
            RememberRequest(
                text=f"fact number {n}", scopes=["s"], caller="t", session="t", decision="add"
            )
        )
    engine.db.dispose()
    return home


def record_ids(home: Path) -> list[str]:
    with sqlite3.connect(home / "index.sqlite") as db:
        return [row[0] for row in db.execute("SELECT record_id FROM facts")]


def test_the_cold_reader_reads_facts_by_their_primary_key(home: Path) -> None:
    ids = record_ids(home)
    connection = sqlite3.connect(home / "index.sqlite")
    seen: list[str] = []
    connection.set_trace_callback(seen.append)  # each statement, its values written in
    found = SqliteReads(connection).current_facts(ids)
    connection.set_trace_callback(None)
    assert len(found) == 12
    chosen = plan(connection, next(sql for sql in seen if "record_id IN" in sql), ())
    assert "superseded_by" not in chosen and "sqlite_autoindex_facts_1" in chosen, chosen
    connection.close()


def test_the_engine_reads_facts_by_their_primary_key(home: Path) -> None:
    ids = record_ids(home)
    engine = open_engine(home=home, embedder_status=EmbedderStatus(None, "not needed here"))
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, sql: str, params: Any, context: Any, many: bool) -> None:
        seen.append((sql, params))

    event.listen(engine.db, "before_cursor_execute", record)
    try:
        found = OrmReads(engine.db).current_facts(ids)
    finally:
        event.remove(engine.db, "before_cursor_execute", record)
    assert len(found) == 12
    sql, params = next((s, p) for s, p in seen if "IN (" in s)
    with sqlite3.connect(home / "index.sqlite") as connection:
        chosen = plan(connection, sql, params)
    assert "superseded_by" not in chosen and "sqlite_autoindex_facts_1" in chosen, chosen
    engine.db.dispose()
