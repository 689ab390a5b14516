"""A bulk write on SQLite logs its facts in the change log a batch at a time, with the log's
per-row insert trigger suspended inside its transaction (engine/storage/embedded/sqlite_batch.py
InsertLogSuspended): the log gets the lines the trigger would have written, in the same order,
and the trigger is there again afterwards, whether the write commits or fails."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from engine.contract.errors import MemoryFailure
from engine.storage.bulk import BulkFact, add_many
from engine.storage.bulk import rows as bulk_rows
from engine.storage.embedded.sqlite_batch import InsertLogSuspended
from engine.storage.store import MemoryEngine

TRIGGER_SQL = "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?"
INSERT_TRIGGER = "fact_changes_on_insert"


def _database(engine: MemoryEngine) -> sqlite3.Connection:
    if engine.db.dialect.name != "sqlite":
        pytest.skip("the suspended trigger is SQLite's (PostgreSQL keeps its row trigger)")
    return sqlite3.connect(Path(str(engine.db.url.database)))


def _log(db: sqlite3.Connection) -> list[str]:
    return [record_id for (record_id,) in db.execute(
        "SELECT record_id FROM fact_changes ORDER BY seq")]  # fmt: skip


def _facts(count: int, start: int = 0) -> list[BulkFact]:
    return [
        BulkFact(text=f"Bulk fact {n} about subject {n % 13}", scopes=["s"], caller="t",
                 session="s1")
        for n in range(start, start + count)
    ]  # fmt: skip


def test_a_bulk_write_logs_each_fact_once_in_order_and_keeps_the_trigger(engine, monkeypatch):
    db = _database(engine)
    trigger = db.execute(TRIGGER_SQL, (INSERT_TRIGGER,)).fetchone()
    before = _log(db)
    suspensions: list[bool] = []  # whether each took the trigger off

    class Watched(InsertLogSuspended):
        def __init__(self, connection: Any) -> None:
            super().__init__(connection)
            suspensions.append(self.log_changes)

    monkeypatch.setattr(bulk_rows, "InsertLogSuspended", Watched)
    report = add_many(engine, _facts(2_500), durable=False)  # three batches of rows
    # The trigger was suspended after the first batch: the log's lines for the other two
    # were written by the bulk write, and read the same.
    assert suspensions == [True]
    assert _log(db) == before + report.added
    assert db.execute(TRIGGER_SQL, (INSERT_TRIGGER,)).fetchone() == trigger
    # The trigger logs the next write again, as it did before.
    (one,) = add_many(engine, _facts(1, start=9_000), durable=False).added
    assert _log(db)[-1] == one


def test_a_supersede_in_a_bulk_write_logs_the_new_fact_then_the_predecessor(engine):
    db = _database(engine)
    (first,) = add_many(engine, _facts(1), durable=False).added
    uri = db.execute("SELECT uri FROM facts WHERE record_id = ?", (first,)).fetchone()[0]
    before = _log(db)
    successor = BulkFact(text="Bulk fact 0, corrected", scopes=["s"], caller="t", session="s1",
                         supersedes=[uri])  # fmt: skip
    (second,) = add_many(engine, [successor], durable=False).added
    assert _log(db) == [*before, second, first]


def test_a_failed_bulk_write_leaves_the_log_and_the_trigger_as_they_were(engine):
    db = _database(engine)
    (first,) = add_many(engine, _facts(1), durable=False).added
    uri = db.execute("SELECT uri FROM facts WHERE record_id = ?", (first,)).fetchone()[0]
    add_many(engine, [BulkFact(text="A successor", scopes=["s"], caller="t", session="s1",
                               supersedes=[uri])], durable=False)  # fmt: skip
    before, trigger = _log(db), db.execute(TRIGGER_SQL, (INSERT_TRIGGER,)).fetchone()
    # A second successor of the same fact would fork its chain: the whole write is refused
    # after its rows were inserted.
    fork = BulkFact(text="Another successor", scopes=["s"], caller="t", session="s1",
                    supersedes=[uri])  # fmt: skip
    with pytest.raises(MemoryFailure):
        add_many(engine, [*_facts(1_500, start=100), fork], durable=False)
    assert _log(db) == before
    assert db.execute(TRIGGER_SQL, (INSERT_TRIGGER,)).fetchone() == trigger
    assert db.execute("SELECT count(*) FROM facts").fetchone() == (2,)
