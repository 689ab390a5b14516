"""What the ranking index reads of each current fact, and the vectors a reader keeps for the
next one: the rows behind the index's IndexedFact (engine/retrieval/results.py) and the
embeddings table. Here, not in engine/retrieval: the ranking index never imports storage."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.retrieval.embeddings import vector_to_bytes
from engine.retrieval.results import IndexedFact
from engine.storage.schema import tables

if TYPE_CHECKING:
    import numpy as np
    from sqlalchemy import Engine

# What a snapshot reads of each current fact: the FactRow columns named like IndexedFact's
# fields.
SNAPSHOT_COLUMNS: tuple[Any, ...] = tuple(
    getattr(tables.FactRow, field.name) for field in fields(IndexedFact)
)


def store_vectors(
    db: Engine, model_id: str, facts: Sequence[IndexedFact], vectors: Sequence[np.ndarray]
) -> None:
    """Best effort: a vector is derived data, so failing to keep it loses nothing."""
    try:
        with Session(db, expire_on_commit=False) as session:
            for fact, vector in zip(facts, vectors, strict=True):
                session.merge(
                    tables.EmbeddingRow(
                        record_id=fact.record_id,
                        model_id=model_id,
                        content_hash=fact.content_hash,
                        vector=vector_to_bytes(vector),
                    )
                )
            session.commit()
    except Exception:  # noqa: BLE001 - a locked or read-only index must not break a query
        pass


def fetch_facts(connection: Connection, ids: Iterable[str]) -> dict[str, IndexedFact]:
    """The facts with these record ids (a PostgreSQL backend's reader: retrieval/entry.py
    FactReader), read on `connection`."""
    wanted = list(ids)
    if not wanted:
        return {}
    rows = connection.execute(
        select(*SNAPSHOT_COLUMNS).where(col(tables.FactRow.record_id).in_(wanted))
    )
    return {row.record_id: IndexedFact.from_row(row) for row in rows}
