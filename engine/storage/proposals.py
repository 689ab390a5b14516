"""The review queue's rows: queueing a write for a person (an agent's write on a
propose-only surface, a likely duplicate met by import) and reading proposals in their public
shape. Deciding them is engine/curation/review.py."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract.normalize import iso_utc
from engine.storage.embedded.sqlite_batch import EncodedJson, insert_proposals
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine


def queue_proposal(
    engine: StoreEngine,
    request: Any,
    text: str,
    scopes: list[str],
    collection: str,
    decision: str,
    result: dict[str, Any],
    *,
    origin: str,
) -> int:
    """Queue a write for a person; an agent repeating the same write while it still waits
    gets the same pending proposal, not a second one."""
    with Session(engine.db, expire_on_commit=False) as session:
        waiting = session.scalars(
            select(tables.ProposalRow)
            .where(tables.ProposalRow.state == "pending")  # type: ignore[arg-type]
            .where(tables.ProposalRow.text == text)  # type: ignore[arg-type]
            .where(tables.ProposalRow.caller == request.caller.strip())
            .where(tables.ProposalRow.collection == collection)  # type: ignore[arg-type]
        ).all()
        for row in waiting:
            if (row.scopes, row.decision, row.predecessor) == (
                scopes,
                decision,
                request.predecessor,
            ) and row.id is not None:
                return row.id
        proposal = tables.ProposalRow(
            **_proposal_values(
                engine.now(), origin, request, text, scopes, collection, decision, result
            )
        )
        session.add(proposal)
        bump_generation(session)
        session.commit()
        assert proposal.id is not None
        return proposal.id


def queue_proposals(
    session: Session,
    now: Any,
    items: list[tuple[Any, str, list[str], str, str, dict[str, Any]]],
    *,
    origin: str,
    waiting: set[tuple[Any, ...]] | None = None,
) -> None:
    """`queue_proposal` for many writes at once, inside the caller's transaction (an import
    commits its facts and their proposals together; it bumps the generation). The waiting
    proposals are read once per batch of texts instead of once per write (with 20k proposals
    the reads made the queueing quadratic), and the new rows inserted by batches of plain
    values (an ORM object per proposal was most of the rest). `waiting`: the writes already
    waiting, as `pending_writes` read them, kept by a caller that queues batch after batch
    under one hold of the write lock (an import); the writes queued here are added to it."""
    if waiting is None:
        waiting = _waiting_among(session, sorted({text for _, text, *_ in items}))
    rows = []
    for request, text, scopes, collection, decision, result in items:
        key = _same_write(text, request.caller.strip(), collection, scopes, decision,
                          request.predecessor)  # fmt: skip
        if key in waiting:
            continue
        waiting.add(key)
        rows.append(
            _proposal_values(now, origin, request, text, scopes, collection, decision, result)
        )
    one_statement = session.get_bind().dialect.name == "sqlite"
    for start in range(0, len(rows), _INSERT_BATCH):
        batch = rows[start : start + _INSERT_BATCH]
        if one_statement:  # engine/storage/embedded/sqlite_batch.py says why
            insert_proposals(session.connection(), batch)
        else:
            session.execute(insert(tables.ProposalRow), [_decoded(row) for row in batch])


_INSERT_BATCH = 1000


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    """The row with each value given as JSON text built as the value (SQLAlchemy's JSON type
    writes it again)."""
    return {
        name: value.value() if isinstance(value, EncodedJson) else value
        for name, value in row.items()
    }


def _proposal_values(
    now: Any,
    origin: str,
    request: Any,
    text: str,
    scopes: list[str],
    collection: str,
    decision: str,
    result: dict[str, Any],
) -> dict[str, Any]:
    """A proposal row's fields, by name (the row's other fields take their defaults)."""
    return dict(
        created_at=now,
        state="pending",
        origin=origin,
        text=text,
        scopes=scopes,
        collection=collection,
        caller=request.caller.strip(),
        session=request.session.strip(),
        source=request.source,
        decision=decision,
        predecessor=request.predecessor,
        predecessor_hash=request.predecessor_hash,
        candidates=result["candidates"],
        matching=result["matching"],
    )


def pending_writes(session: Session) -> set[tuple[Any, ...]]:
    """What makes each waiting proposal the same write as another, for all of them: one
    read, where a read per batch of texts scanned the queue each time (no index holds the
    text: 0.13 s a batch with 85k proposals waiting)."""
    return {_same_write(*same) for same in session.execute(_SAME_WRITE.where(_PENDING))}


def _waiting_among(session: Session, texts: list[str]) -> set[tuple[Any, ...]]:
    waiting: set[tuple[Any, ...]] = set()
    for start in range(0, len(texts), 500):
        query = _SAME_WRITE.where(_PENDING).where(
            col(tables.ProposalRow.text).in_(texts[start : start + 500])
        )
        waiting.update(_same_write(*same) for same in session.execute(query))
    return waiting


# The fields that make two writes the same, not whole rows (their candidates are big).
_SAME_WRITE = select(
    col(tables.ProposalRow.text),
    col(tables.ProposalRow.caller),
    col(tables.ProposalRow.collection),
    col(tables.ProposalRow.scopes),
    col(tables.ProposalRow.decision),
    col(tables.ProposalRow.predecessor),
)
_PENDING = col(tables.ProposalRow.state) == "pending"


def _same_write(*fields: Any) -> tuple[Any, ...]:
    return tuple(tuple(f) if isinstance(f, list) else f for f in fields)


def public_proposal(row: tables.ProposalRow) -> dict[str, Any]:
    assert row.created_at is not None
    shaped: dict[str, Any] = {
        "id": row.id,
        "state": row.state,
        "origin": row.origin,
        "createdAt": iso_utc(row.created_at),
        "text": row.text,
        "scopes": list(row.scopes),
        "collection": row.collection,
        "caller": row.caller,
        "session": row.session,
        "source": row.source,
        "decision": row.decision,
        "predecessor": row.predecessor,
        "predecessorHash": row.predecessor_hash,
        "candidates": list(row.candidates),
        "matching": dict(row.matching),
    }
    if row.state == "deciding":
        # While a decision holds it, these columns hold its claim (engine/curation/claims.py),
        # which is the engine's bookkeeping, not a decision: shown as not decided yet.
        shaped.update(decidedAt=None, decidedBy=None, resolution=None)
    elif row.state != "pending":
        shaped["decidedAt"] = iso_utc(row.decided_at) if row.decided_at else None
        shaped["decidedBy"] = row.decided_by
        shaped["resolution"] = row.resolution
    return shaped


def list_proposals(
    engine: StoreEngine,
    *,
    state: str | None = "pending",
    caller: str | None = None,
    texts: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """The proposals, oldest first: of `state` (None: any), and, when given, only `caller`'s
    and only those of `texts` (their text as stored)."""
    with Session(engine.db, expire_on_commit=False) as session:
        query = select(tables.ProposalRow).order_by(col(tables.ProposalRow.id))
        if state is not None:
            query = query.where(col(tables.ProposalRow.state) == state)
        if caller is not None:
            query = query.where(col(tables.ProposalRow.caller) == caller)
        if texts is not None:
            query = query.where(col(tables.ProposalRow.text).in_(list(texts)))
        return [public_proposal(row) for row in session.scalars(query)]


def get_proposal(engine: StoreEngine, proposal_id: int) -> dict[str, Any] | None:
    """One proposal by id, in any state, as list_proposals gives it; None when there is none."""
    with Session(engine.db, expire_on_commit=False) as session:
        found = session.get(tables.ProposalRow, proposal_id)
        return None if found is None else public_proposal(found)
