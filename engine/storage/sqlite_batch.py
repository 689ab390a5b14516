"""A bulk write's rows on SQLite, one statement per batch: the batch goes in as one JSON
array and SQLite unpacks it with json_each (and the vectors as one blob, cut with substr).

Why not executemany: the sqlite3 module gives the GIL away around every row it steps and
takes it back after, and while a bulk write inserts its rows on a thread of their own
(engine/storage/bulk_rows.py) the planning thread holds the GIL for most of the time. Each of
the ~300k rows of a 100k import then waited for the GIL: the rows thread took 13.6 s for what
SQLite did in 3.5 s alone, and it slowed the planning thread as much by taking the GIL back.
One statement per thousand rows gives the GIL away once per batch. The values are those the
columns store (records.stored_fact): JSON text, ISO times, integers and NULL; a JSON string
reads back through `->>` as the same text.

An import's proposals go the same way, their JSON columns as the text SQLAlchemy's JSON type
writes: through SQLAlchemy they took 1.5 s for the 21.6k proposals of a 100k import."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from engine.contract.normalize import iso_utc
from engine.storage.records import FACT_COLUMNS, stored_fact

_FACTS = (
    f"INSERT INTO facts ({', '.join(FACT_COLUMNS)}) "
    f"SELECT {', '.join(f'value ->> {i}' for i in range(len(FACT_COLUMNS)))} FROM json_each(?)"
)
_SCOPES = (
    "INSERT INTO fact_scopes (record_id, scope) SELECT value ->> 0, value ->> 1 FROM json_each(?)"
)
# A vector left by a fact that reindex took out of the index (same record id) is replaced.
# `WHERE true`: SQLite's grammar needs it between an INSERT's SELECT and its ON CONFLICT.
_EMBEDDINGS = (
    "INSERT INTO embeddings (record_id, model_id, content_hash, vector) "
    "SELECT value ->> 0, ?, value ->> 1, substr(?, value ->> 2, value ->> 3) "
    "FROM json_each(?) WHERE true "
    "ON CONFLICT (record_id) DO UPDATE SET model_id = excluded.model_id, "
    "content_hash = excluded.content_hash, vector = excluded.vector"
)


# A proposal's columns, and which of them hold JSON (as json.dumps writes it, as SQLAlchemy's
# JSON type would have).
PROPOSAL_COLUMNS = (
    "created_at", "state", "origin", "text", "scopes", "collection", "caller", "session",
    "source", "decision", "predecessor", "predecessor_hash", "candidates", "matching",
)  # fmt: skip
_PROPOSAL_JSON = frozenset({"scopes", "candidates", "matching"})
_PROPOSALS = (
    f"INSERT INTO proposals ({', '.join(PROPOSAL_COLUMNS)}) SELECT "
    + ", ".join(f"value ->> {i}" for i in range(len(PROPOSAL_COLUMNS)))
    + " FROM json_each(?)"
)


def _packed(rows: Sequence[Sequence[Any]]) -> str:
    # Not ASCII-escaped: the text stays as it is, SQLite reads UTF-8 JSON.
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def insert_facts(connection: Connection, rows: Sequence[Any]) -> None:
    """The facts-table rows of these facts (FactRow or anything with its fields) and their
    scopes."""
    values = [list(stored_fact(row).values()) for row in rows]
    connection.exec_driver_sql(_FACTS, (_packed(values),))
    scopes = [(row.record_id, scope) for row in rows for scope in row.scopes]
    connection.exec_driver_sql(_SCOPES, (_packed(scopes),))


def insert_embeddings(
    connection: Connection, model_id: str, vectors: Sequence[tuple[str, str, bytes]]
) -> None:
    """(record id, content hash, vector bytes) rows of one model, replacing any vector those
    record ids had."""
    offsets, start = [], 1  # substr counts from 1
    for record_id, digest, blob in vectors:
        offsets.append((record_id, digest, start, len(blob)))
        start += len(blob)
    joined = b"".join(blob for *_, blob in vectors)
    connection.exec_driver_sql(_EMBEDDINGS, (model_id, joined, _packed(offsets)))


def insert_proposals(connection: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """New proposals' rows (their PROPOSAL_COLUMNS by name, `created_at` an aware datetime)."""
    values = []
    for row in rows:
        value: list[Any] = [
            json.dumps(row[name]) if name in _PROPOSAL_JSON else row[name]
            for name in PROPOSAL_COLUMNS
        ]
        value[0] = iso_utc(row["created_at"])  # stored as ISO text
        values.append(value)
    connection.exec_driver_sql(_PROPOSALS, (_packed(values),))
