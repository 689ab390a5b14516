"""The index half of a write: the fact's row, its scope rows and its vector, with the
supersede compare-and-swap. The file half is engine/memory/remember.py; MemoryEngine's
`index_new_fact` calls this inside one transaction (a seam fault-injection tests replace)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.retrieval.embeddings import embed_facts
from engine.retrieval.snapshot import IndexedFact, store_vectors
from engine.storage import tables
from engine.storage.database import bump_generation
from engine.storage.records import scope_rows

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


def insert_fact_row(
    session: Session, row: tables.FactRow, predecessor: tables.FactRow | None, now_iso_moment: Any
) -> None:
    """The index half of a write, inside the caller's transaction."""
    if predecessor is not None:
        swapped = session.execute(
            update(tables.FactRow)
            .where(tables.FactRow.record_id == predecessor.record_id)  # type: ignore[arg-type]
            .where(tables.FactRow.superseded_by.is_(None))  # type: ignore[union-attr]
            .where(tables.FactRow.retired_at.is_(None))  # type: ignore[union-attr]
            .values(superseded_by=row.record_id, superseded_at=now_iso_moment)
        )
        if getattr(swapped, "rowcount", 0) != 1:
            raise MemoryFailure(
                "MEMORY_SUPERSEDE_CONFLICT",
                f"{predecessor.uri} was superseded by another writer first. Recall again and "
                "supersede the current fact instead.",
            )
    session.add(row)
    session.flush()
    session.add_all(scope_rows(row))
    bump_generation(session)


def keep_vector(engine: MemoryEngine, row: tables.FactRow) -> None:
    embedder = engine.embedder_status.embedder
    if embedder is not None:
        fact = IndexedFact.from_row(row)
        store_vectors(engine.db, embedder.model_id, [fact], embed_facts(embedder, [row.text]))
