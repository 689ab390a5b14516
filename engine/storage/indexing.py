"""The index half of a write: the fact's row, its scope rows and its vector, with the
supersede compare-and-swap. The file half is engine/memory/remember.py; MemoryEngine's
`index_new_fact` (a seam fault-injection tests replace) calls `insert_new_fact` inside one
transaction, the vector's row included. `insert_fact_row` is the same through the ORM, for
callers that go on with the row in their session (reindex)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.retrieval.embeddings import embed_facts, vector_to_bytes
from engine.retrieval.snapshot import IndexedFact
from engine.storage.reads.records import (
    INSERT_FACT,
    INSERT_FACT_SCOPES,
    UPSERT_EMBEDDING,
    NewFact,
    scope_rows,
    stored_fact,
    stored_scopes,
)
from engine.storage.reads.snapshot_rows import store_vectors
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.embedded.sqlite_driver import DriverStatements
    from engine.storage.mode import StoreEngine


def insert_new_fact(
    session: Session,
    row: NewFact,
    predecessor: tables.FactRow | None,
    now_iso_moment: Any,
    *,
    vector: dict[str, Any] | None = None,
    bump: bool = True,
    statements: DriverStatements | None = None,
) -> None:
    """The index half of a new fact's write, inside the caller's transaction, as plain
    inserts (the row itself stays out of the session). A supersede is a compare-and-swap on
    the predecessor (MEMORY_SUPERSEDE_CONFLICT if another writer moved it); a keyed row whose
    (namespace, key, revision) is taken, by a writer on another home sharing this index, is
    the keyed API's conflict (MEMORY_KEY_EXISTS for a create, MEMORY_REVISION_CONFLICT for a
    later revision). Either way the caller rolls back, so nothing of this write stays.
    `vector`: the values of its embeddings row (`vector_values`). `bump=False`: the caller's
    transaction moves the generation once for all its writes (a group commit), whose
    `statements` run them on SQLite's driver (engine/storage/embedded/sqlite_driver.py)."""
    if predecessor is not None:
        _swap_predecessor(session, row, predecessor, now_iso_moment, statements)
    try:
        if statements is not None:
            statements.insert(INSERT_FACT, [stored_fact(row)])
        else:
            # The session's transaction; no ORM work per statement.
            session.connection().execute(INSERT_FACT, stored_fact(row))
    except IntegrityError as exc:
        if row.kv_key is None or "kv_key" not in str(exc.orig):
            raise
        raise _key_taken(row) from exc
    if statements is not None:
        statements.insert(INSERT_FACT_SCOPES, stored_scopes(row))
        if vector is not None:
            statements.insert(UPSERT_EMBEDDING, [vector])
    else:
        connection = session.connection()
        connection.execute(INSERT_FACT_SCOPES, stored_scopes(row))
        if vector is not None:
            connection.execute(UPSERT_EMBEDDING, vector)
    if bump:
        bump_generation(session, statements)


def insert_fact_row(
    session: Session,
    row: tables.FactRow,
    predecessor: tables.FactRow | None,
    now_iso_moment: Any,
    *,
    bump: bool = True,
) -> None:
    """`insert_new_fact` through the ORM: the row is added to the caller's session (and
    flushed with it), for callers that keep working with it there."""
    if predecessor is not None:
        _swap_predecessor(session, row, predecessor, now_iso_moment)
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


# The supersede's compare-and-swap, built once (records.py's note on the write's statements).
_FACTS = tables.FactRow.__table__  # type: ignore[attr-defined]
_SWAP_PREDECESSOR = (
    update(_FACTS)
    .where(_FACTS.c.record_id == bindparam("predecessor"))
    .where(_FACTS.c.superseded_by.is_(None))
    .where(_FACTS.c.retired_at.is_(None))
    .values(superseded_by=bindparam("successor"), superseded_at=bindparam("moment"))
)


def _swap_predecessor(
    session: Session,
    row: NewFact,
    predecessor: tables.FactRow,
    now_iso_moment: Any,
    statements: DriverStatements | None = None,
) -> None:
    values = {"predecessor": predecessor.record_id, "successor": row.record_id}
    if statements is not None:
        moment = iso_utc(now_iso_moment)
        swapped = statements.change(_SWAP_PREDECESSOR, {**values, "moment": moment})
    else:
        result = session.execute(_SWAP_PREDECESSOR, {**values, "moment": now_iso_moment})
        swapped = getattr(result, "rowcount", 0)
    if swapped != 1:
        raise MemoryFailure(
            "MEMORY_SUPERSEDE_CONFLICT",
            f"{predecessor.uri} was superseded by another writer first. Recall again and "
            "supersede the current fact instead.",
        )


def _key_taken(row: NewFact) -> MemoryFailure:
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


def vector_values(engine: StoreEngine, row: NewFact) -> dict[str, Any] | None:
    """The new fact's embeddings row as values for the write's own transaction, or None
    without a model. Best effort: a vector is derived data (a snapshot embeds a fact it
    lacks), so an embedder that fails must not fail the write."""
    embedder = engine.embedder_status.embedder
    if embedder is None:
        return None
    vector = engine.vectors_ahead.take(embedder, row.text)
    if vector is None:
        try:
            (block,) = embed_facts(embedder, [row.text])
        except Exception:  # noqa: BLE001 - derived data: the write goes on without it
            return None
        vector = vector_to_bytes(block)
    return {
        "record_id": row.record_id,
        "model_id": embedder.model_id,
        "content_hash": row.content_hash,
        "vector": vector,
    }


def keep_vector(engine: StoreEngine, row: tables.FactRow) -> None:
    """The vector in a transaction of its own (reindex, settling an unfinished write)."""
    embedder = engine.embedder_status.embedder
    if embedder is not None:
        fact = IndexedFact.from_row(row)
        store_vectors(engine.db, embedder.model_id, [fact], embed_facts(embedder, [row.text]))
