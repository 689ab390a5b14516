"""The index half of a write: the fact's row, its scope rows and its vector, with the
supersede compare-and-swap. The file half is engine/memory/remember.py; MemoryEngine's
`index_new_fact` calls this inside one transaction, the vector's row included (a seam
fault-injection tests replace)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.retrieval.embeddings import embed_facts, vector_to_bytes
from engine.retrieval.snapshot import IndexedFact, store_vectors
from engine.storage import tables
from engine.storage.database import bump_generation
from engine.storage.records import scope_rows

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


def insert_fact_row(
    session: Session,
    row: tables.FactRow,
    predecessor: tables.FactRow | None,
    now_iso_moment: Any,
    *,
    bump: bool = True,
) -> None:
    """The index half of a write, inside the caller's transaction. A supersede is a
    compare-and-swap on the predecessor (MEMORY_SUPERSEDE_CONFLICT if another writer moved
    it); a keyed row whose (namespace, key, revision) is taken, by a writer on another home
    sharing this index, is the keyed API's conflict (MEMORY_KEY_EXISTS for a create,
    MEMORY_REVISION_CONFLICT for a later revision). Either way nothing of this write stays.
    `bump=False`: the caller's transaction moves the generation once for all its writes (a
    group commit)."""
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
    if row.kv_key is not None:  # flushed alone, so that a taken key is told apart
        try:
            session.flush()
        except IntegrityError as exc:
            if "kv_key" not in str(exc.orig):
                raise
            raise _key_taken(row) from exc
    session.add_all(scope_rows(row))
    if bump:
        bump_generation(session)


def _key_taken(row: tables.FactRow) -> MemoryFailure:
    where = f"key {row.kv_key!r} (namespace {row.kv_namespace!r})"
    if row.kv_revision == 1:
        return MemoryFailure(
            "MEMORY_KEY_EXISTS",
            f"Another writer created {where} at the same moment; it now holds revision 1. "
            "Read it (`gno-tui memory get`) and, to replace it, retry with if_revision: 1.",
        )
    return MemoryFailure(
        "MEMORY_REVISION_CONFLICT",
        f"Another writer wrote revision {row.kv_revision} of {where} first. Read it again "
        f"and retry with if_revision: {row.kv_revision}.",
    )


def vector_row(engine: MemoryEngine, row: tables.FactRow) -> tables.EmbeddingRow | None:
    """The new fact's vector as a row for the write's own transaction, or None without a
    model. Best effort: a vector is derived data (a snapshot embeds a fact it lacks), so an
    embedder that fails must not fail the write."""
    embedder = engine.embedder_status.embedder
    if embedder is None:
        return None
    try:
        (block,) = embed_facts(embedder, [row.text])
    except Exception:  # noqa: BLE001 - derived data: the write goes on without it
        return None
    return tables.EmbeddingRow(
        record_id=row.record_id,
        model_id=embedder.model_id,
        content_hash=row.content_hash,
        vector=vector_to_bytes(block),
    )


def keep_vector(engine: MemoryEngine, row: tables.FactRow) -> None:
    """The vector in a transaction of its own (reindex, settling an unfinished write)."""
    embedder = engine.embedder_status.embedder
    if embedder is not None:
        fact = IndexedFact.from_row(row)
        store_vectors(engine.db, embedder.model_id, [fact], embed_facts(embedder, [row.text]))
