"""A bulk write's rows on SQLite, many rows per statement: `INSERT ... VALUES (...), (...)`
with every value bound, as many rows as SQLite's limit on bound variables allows.

Why not executemany: the sqlite3 module gives the GIL away around every row it steps and
takes it back after, and while a bulk write inserts its rows on a thread of their own
(engine/storage/bulk/rows.py) the planning thread holds the GIL for most of the time. Each of
the ~300k rows of a 100k import then waited for the GIL: the rows thread took 13.6 s for what
SQLite did in 3.5 s alone, and it slowed the planning thread as much by taking the GIL back.
One statement per batch gives the GIL away once per batch. Why not a JSON array unpacked by
json_each, as before: SQLite then parsed every row's JSON and took each of its 26 columns out
again, and the rows were encoded as JSON first (78k facts and their scopes: 3.4 s through
json_each, 2.0 s bound as values, measured alone). The values are those the columns store
(records.stored_fact): JSON text, ISO times, integers and NULL.

An import's proposals go in by executemany on SQLite's own driver, their JSON columns as the
text SQLAlchemy's JSON type writes: through SQLAlchemy they took 1.5 s for the 21.6k proposals
of a 100k import. They are written after the rows thread is done, so no thread waits for the
GIL between rows; packed into json_each their 54 MB of candidates were escaped once more and
read back by SQLite (0.75 s where executemany takes 0.14 s)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection

from engine.contract.normalize import iso_utc
from engine.storage.reads.records import FACT_COLUMNS, stored_fact

_FACTS = f"INSERT INTO facts ({', '.join(FACT_COLUMNS)}) VALUES "
_SCOPES = "INSERT INTO fact_scopes (record_id, scope) VALUES "
# A vector left by a fact that reindex took out of the index (same record id) is replaced.
_EMBEDDINGS = "INSERT INTO embeddings (record_id, model_id, content_hash, vector) VALUES "
_EMBEDDINGS_TAIL = (
    " ON CONFLICT (record_id) DO UPDATE SET model_id = excluded.model_id, "
    "content_hash = excluded.content_hash, vector = excluded.vector"
)
# SQLite's own limit on bound variables since 3.32 is 32766; older builds allow 999. The
# connection says which (Connection.getlimit).
_FALLBACK_VARIABLES = 999


def _insert_rows(
    connection: Connection, head: str, width: int, rows: Sequence[Sequence[Any]], tail: str = ""
) -> None:
    """`head` + as many `(?, ...)` groups of `width` values as one statement may bind, for
    every row, in order."""
    driver = connection.connection.driver_connection
    try:
        variables = driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)  # type: ignore[union-attr]
    except AttributeError:  # not the sqlite3 module's connection
        variables = _FALLBACK_VARIABLES
    per_statement = max(1, variables // width)
    for start in range(0, len(rows), per_statement):
        part = rows[start : start + per_statement]
        connection.exec_driver_sql(
            _statement(head, width, len(part), tail),
            tuple([value for row in part for value in row]),
        )


# Bounded: a long-running process writes batches of many sizes (each a statement of up to
# ~100 KB of text); the full batches' statements are the ones worth keeping.
@lru_cache(maxsize=16)
def _statement(head: str, width: int, count: int, tail: str) -> str:
    group = f"({', '.join('?' * width)})"
    return head + ", ".join([group] * count) + tail


# A proposal's columns, and which of them hold JSON (as json.dumps writes it, as SQLAlchemy's
# JSON type would have).
PROPOSAL_COLUMNS = (
    "created_at", "state", "origin", "text", "scopes", "collection", "caller", "session",
    "source", "decision", "predecessor", "predecessor_hash", "candidates", "matching",
)  # fmt: skip
_PROPOSAL_JSON = frozenset({"scopes", "candidates", "matching"})
_PROPOSALS = (
    f"INSERT INTO proposals ({', '.join(PROPOSAL_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in PROPOSAL_COLUMNS)})"
)


class EncodedJson:
    """A JSON value given as the text json.dumps writes for it, made more cheaply by whoever
    made the value (engine/interop/import_proposals.py); the value itself is built only when
    something reads it (a server database's JSON column)."""

    __slots__ = ("_build", "encoded")

    def __init__(self, encoded: str, build: Callable[[], Any]) -> None:
        self.encoded = encoded
        self._build = build

    def value(self) -> Any:
        return self._build()


def _json_text(value: Any) -> str:
    return value.encoded if isinstance(value, EncodedJson) else json.dumps(value)


def insert_facts(connection: Connection, rows: Sequence[Any], *, log_changes: bool) -> None:
    """The facts-table rows of these facts (FactRow or anything with its fields) and their
    scopes; with `log_changes`, their lines in the change log as well (the insert trigger
    being suspended: InsertLogSuspended)."""
    values = [tuple(stored_fact(row).values()) for row in rows]
    _insert_rows(connection, _FACTS, len(FACT_COLUMNS), values)
    if log_changes:
        _insert_rows(connection, _CHANGES, 1, [(row.record_id,) for row in rows])
    scopes = [(row.record_id, scope) for row in rows for scope in row.scopes]
    _insert_rows(connection, _SCOPES, 2, scopes)


def insert_embeddings(
    connection: Connection, model_id: str, vectors: Sequence[tuple[str, str, bytes]]
) -> None:
    """(record id, content hash, vector bytes) rows of one model, replacing any vector those
    record ids had."""
    rows = [(record_id, model_id, digest, blob) for record_id, digest, blob in vectors]
    _insert_rows(connection, _EMBEDDINGS, 4, rows, _EMBEDDINGS_TAIL)


# The change log's insert trigger (engine/storage/schema/migrations/baseline_ops.py) and the line it
# writes for each inserted fact, in insertion order.
_INSERT_TRIGGER = "fact_changes_on_insert"
_CHANGES = "INSERT INTO fact_changes (record_id) VALUES "


class InsertLogSuspended:
    """Within a bulk write's transaction, once its first rows are in, the change log's per-row
    insert trigger dropped and its lines written a batch at a time instead (insert_facts with
    log_changes), then the trigger made again from its own SQL before the commit.

    Why: SQLite runs a trigger as a subprogram per row, and the log's AUTOINCREMENT key
    updates sqlite_sequence each time; inserting the 78k facts of a 100k import took 4.8 s
    with the trigger and 3.0 s with one statement per batch for the log. The log holds the
    same lines in the same order. DDL is part of the transaction in SQLite: a rollback or a
    crash leaves the trigger as it was, and other connections never see it missing (they read
    the committed schema, which has it)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._sql: str | None = None
        # Only inside a transaction the driver has begun (it begins one at the first INSERT,
        # not at DDL): a DROP outside one would be committed at once, and a crash would
        # leave the log without its trigger.
        if not getattr(connection.connection.driver_connection, "in_transaction", False):
            return
        self._sql = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
            (_INSERT_TRIGGER,),
        ).scalar()
        if self._sql is not None:
            connection.exec_driver_sql(f"DROP TRIGGER {_INSERT_TRIGGER}")

    @property
    def log_changes(self) -> bool:
        """The log's lines are the writer's to insert (there was a trigger to suspend)."""
        return self._sql is not None

    def restore(self) -> None:
        if self._sql is not None:
            self._connection.exec_driver_sql(self._sql)
            self._sql = None


def insert_proposals(connection: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """New proposals' rows (their PROPOSAL_COLUMNS by name, `created_at` an aware datetime)."""
    values = []
    for row in rows:
        value: list[Any] = [
            _json_text(row[name]) if name in _PROPOSAL_JSON else row[name]
            for name in PROPOSAL_COLUMNS
        ]
        value[0] = iso_utc(row["created_at"])  # stored as ISO text
        values.append(tuple(value))
    connection.exec_driver_sql(_PROPOSALS, values)
