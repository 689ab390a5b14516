"""Work a write does before the write lock, and a group of one write without a savepoint
(gno_tui/mcp_writes.py's lane uses both): the rows a write leaves are exactly the rows it
would leave without them, and a failure still leaves none of its rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

import engine.storage.store as store_module
from engine.retrieval.embeddings import VectorsAhead, embed_facts, vector_from_bytes
from engine.storage import indexing
from engine.storage.schema import tables

TEXTS = [
    "Alice prefers green tea. She drinks it at nine.",
    "  Café au lait on Sundays  ",  # trimmed and NFC when stored
    "Bob's deploy runs at 06:00 UTC",
]


def _stored_vector(engine: Any, record_id: str) -> np.ndarray:
    with Session(engine.db) as session:
        row = session.get(tables.EmbeddingRow, record_id)
        assert row is not None
        return vector_from_bytes(row.vector, engine.embedder_status.embedder.dims)


@pytest.mark.parametrize("text", TEXTS)
def test_a_vector_made_ahead_is_the_one_the_write_would_make(semantic_client, text) -> None:
    memory = semantic_client.memory
    embedder = semantic_client.engine.embedder_status.embedder
    memory.embed_ahead(text)
    assert len(semantic_client.engine.vectors_ahead._vectors) == 1
    with memory.write_batch() as batch:
        batch.expect(1)
        added = semantic_client.add(text, "user:alice")
    stored = added["record"]["text"]
    assert semantic_client.engine.vectors_ahead._vectors == {}  # used, not kept
    (fresh,) = embed_facts(embedder, [stored])
    assert np.array_equal(
        _stored_vector(semantic_client.engine, added["record"]["recordId"]), fresh
    )


def test_a_vector_made_ahead_for_another_text_is_not_used(semantic_client) -> None:
    memory = semantic_client.memory
    embedder = semantic_client.engine.embedder_status.embedder
    memory.embed_ahead("Alice prefers green tea")
    added = semantic_client.add("Alice prefers black coffee", "user:alice")
    (fresh,) = embed_facts(embedder, ["Alice prefers black coffee"])
    assert np.array_equal(
        _stored_vector(semantic_client.engine, added["record"]["recordId"]), fresh
    )


def test_a_text_the_write_refuses_is_not_embedded_ahead(semantic_client, client) -> None:
    semantic_client.memory.embed_ahead("   ")
    semantic_client.memory.embed_ahead(None)
    semantic_client.memory.embed_ahead("x" * 10_000)  # over the size limit
    assert semantic_client.engine.vectors_ahead._vectors == {}
    client.memory.embed_ahead("Alice prefers green tea")  # no model: nothing to do
    assert client.engine.vectors_ahead._vectors == {}


def test_vectors_made_ahead_are_bounded_oldest_first(tiny_embedder) -> None:
    ahead = VectorsAhead()
    texts = [f"note number {n}" for n in range(VectorsAhead.LIMIT + 5)]
    for text in texts:
        ahead.put(tiny_embedder, text)
    assert len(ahead._vectors) == VectorsAhead.LIMIT
    assert ahead.take(tiny_embedder, texts[0]) is None
    kept = ahead.take(tiny_embedder, texts[-1])
    (fresh,) = embed_facts(tiny_embedder, [texts[-1]])
    assert kept is not None and np.array_equal(np.frombuffer(kept, dtype=np.float32), fresh[0])


def _rows(engine: Any) -> dict[str, str | None]:
    with Session(engine.db) as session:
        return {row.record_id: row.superseded_by for row in session.scalars(select(tables.FactRow))}


@pytest.mark.embedded_mode
def test_a_sole_write_whose_rows_fail_leaves_none_of_them(client, monkeypatch) -> None:
    first = client.add("Dana lives in Oslo", "user:dana")
    real = indexing.insert_new_fact  # what the store calls, by its name in store.py

    def rows_then_failure(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)  # the predecessor swapped, the row, its scopes: then a failure
        raise RuntimeError("disk I/O error")

    monkeypatch.setattr(store_module, "insert_new_fact", rows_then_failure)
    with client.memory.write_batch() as batch:
        batch.expect(1)
        failed = client.supersede(first, "Dana moved to Bergen")
    assert failed["sync"]["status"] == "failed" and "disk I/O error" in failed["sync"]["error"]
    # None of its rows: the predecessor is still current, no row of the new fact.
    assert _rows(client.engine) == {first["record"]["recordId"]: None}
    assert Path(failed["absPath"]).is_file()  # the file stands, journalled

    monkeypatch.undo()
    client.add("Dana drinks water", "user:dana")  # its lock settles the journal first
    rows = _rows(client.engine)
    assert rows[first["record"]["recordId"]] == failed["record"]["recordId"]
    assert len(client.recall("Bergen", ["user:dana"])["facts"]) == 1


def test_a_sole_write_commits_like_any_other(client) -> None:
    with client.memory.write_batch() as batch:
        batch.expect(1)
        added = client.add("Erin keeps the release notes", "user:erin")
    with client.memory.write_batch() as batch:
        batch.expect(1)
        again = client.remember("Erin keeps the release notes", ["user:erin"])
    assert again["outcome"] == "existing"
    assert _rows(client.engine) == {added["record"]["recordId"]: None}
