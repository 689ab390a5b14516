"""The index half of a write inserts plain values (engine/storage/indexing.py insert_new_fact):
what it stores must be exactly what a rebuild from the fact files derives, and a vector left
behind under the new fact's record id must not fail the write."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from engine.contract.normalize import counted_record_ids
from engine.facade.factory import open_engine
from engine.keyed import service as keyed
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine

if TYPE_CHECKING:
    from conftest import Client


def _reindex_changes(client: Client) -> dict[str, int]:
    report: Mapping[str, Any] = client.memory.reindex()
    return {name: report[name] for name in ("added", "changed", "removed")}


def test_rows_written_as_values_are_what_a_rebuild_derives(semantic_client: Client) -> None:
    client = semantic_client
    first = client.add("Alice drinks green tea", "user:alice", source="chat 12 — café")
    client.add("Ünïcode «quotes» and a \\ backslash", "user:alice", "project:gno")
    with client.memory.write_batch():
        client.add("Bob lives in Paris", "user:bob")
        newer = client.supersede(first, "Alice drinks black coffee")
    assert newer["outcome"] == "superseded"
    # A rebuild from the files changes nothing: every column, the supersede link included.
    assert _reindex_changes(client) == {"added": 0, "changed": 0, "removed": 0}
    with Session(client.engine.db) as session:
        row = session.get(tables.FactRow, first["record"]["recordId"])
        assert row is not None and row.superseded_by == newer["record"]["recordId"]
        assert row.source == "chat 12 — café" and row.scopes == ["user:alice"]
        assert isinstance(row.workbench, dict) and row.workbench["docid"] == row.docid


def test_a_keyed_write_stores_its_key_columns_as_a_rebuild_does(client: Client) -> None:
    keyed.remember(
        client.engine, {"key": "deploy", "memory": {"content": "Friday", "tags": ["ops"]}}
    )
    keyed.remember(
        client.engine,
        {"key": "deploy", "if_revision": 1, "memory": {"content": "Monday", "tags": ["ops"]}},
    )
    with Session(client.engine.db) as session:
        rows = session.scalars(
            select(tables.FactRow).where(tables.FactRow.kv_key == "deploy")  # type: ignore[arg-type]
        ).all()
    assert sorted((row.kv_revision, row.text, row.kv_tags) for row in rows) == [
        (1, "Friday", "\x1fops\x1f"),
        (2, "Monday", "\x1fops\x1f"),
    ]
    assert _reindex_changes(client) == {"added": 0, "changed": 0, "removed": 0}


@pytest.fixture
def counted_engine(home: Path, tiny_embedder: StaticModelEmbedder) -> Iterator[MemoryEngine]:
    store = open_engine(
        home=home, embedder_status=EmbedderStatus(tiny_embedder), ids=counted_record_ids("v")
    )
    yield store
    store.db.dispose()


def test_a_vector_left_under_the_new_record_id_is_replaced(
    counted_engine: MemoryEngine, client_over: Callable[[MemoryEngine], Client]
) -> None:
    """Reindex can take a fact out of the index and leave its vector; an engine whose ids are
    counted mints that record id again. The write replaces the vector instead of failing."""
    stale_id = counted_record_ids("v")()
    with Session(counted_engine.db) as session:
        session.execute(
            insert(tables.EmbeddingRow).values(
                record_id=stale_id, model_id="an-old-model", content_hash="0" * 64, vector=b"\0"
            )
        )
        session.commit()
    result = client_over(counted_engine).add("Carol likes the savanna", "user:carol")
    assert result["record"]["recordId"] == stale_id
    with Session(counted_engine.db) as session:
        vector = session.get(tables.EmbeddingRow, stale_id)
        assert vector is not None
        assert vector.content_hash == result["record"]["contentHash"]
        assert vector.model_id != "an-old-model"


def _stored_rows(engine: MemoryEngine) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the write's tables as SQLite holds it (the stored text, not parsed)."""
    path = engine.sqlite_path
    assert path is not None
    with sqlite3.connect(path) as connection:
        return {
            name: connection.execute(f"SELECT * FROM {name} ORDER BY 1, 2").fetchall()
            for name in ("facts", "fact_scopes", "embeddings", "fact_changes")
        }


@pytest.mark.sqlite_only  # the driver path is SQLite's
def test_a_group_commit_stores_exactly_what_single_writes_store(
    tmp_path: Path,
    tiny_embedder: StaticModelEmbedder,
    client_over: Callable[[MemoryEngine], Client],
) -> None:
    """On SQLite a group's statements run on the driver (engine/storage/embedded/sqlite_driver.py);
    the same writes with the same clock and ids, one by one outside any group, must leave
    the same bytes in every table: times, JSON, the supersede link, the change log."""

    def write(client: Client, grouped: bool) -> None:
        group = client.memory.write_batch if grouped else nullcontext
        with group():  # a group of one (no savepoint)
            first = client.add("Dana keeps bees", "user:dana", source="chat 3")
        with group():  # a group of several: each write in a savepoint of its own
            client.add("Dana's hives are on the roof", "user:dana", "project:honey")
            second = client.supersede(first, "Dana keeps bees and goats")
            again = client.remember("Dana's hives are on the roof", ("user:dana",))
        assert second["outcome"] == "superseded" and again["outcome"] == "existing"

    stored = []
    for grouped in (False, True):
        moments = iter([datetime(2026, 3, 1, 9, 0, second, tzinfo=UTC) for second in range(60)])
        engine = open_engine(
            home=tmp_path / f"grouped-{grouped}",
            embedder_status=EmbedderStatus(tiny_embedder),
            ids=counted_record_ids("g"),
            clock=moments.__next__,
        )
        try:
            write(client_over(engine), grouped)
            stored.append(_stored_rows(engine))
        finally:
            engine.db.dispose()
    plain, grouped_rows = stored
    assert plain["facts"] and plain == grouped_rows
