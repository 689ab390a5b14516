"""The review queue's and the claims' SQL (engine/curation/review.py, claims.py,
claim_recovery.py, undo_review.py, calibration.py): the proposals' conditional updates that
take, complete and release a claim, and the reads that recover one. Each helper takes the
session explicitly; none commits (the caller's transaction decides)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ScalarResult, and_, or_, select, update
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.storage.schema import tables

_ROW = tables.ProposalRow


def claim_pending(
    session: Session, proposal_id: int, *, token: str, actor: str | None, at: datetime | None
) -> bool:
    """Whether the proposal was pending and is now deciding under the claim `token` (one
    conditional update)."""
    taken = session.execute(
        update(tables.ProposalRow)
        .where(col(tables.ProposalRow.id) == proposal_id)
        .where(col(tables.ProposalRow.state) == "pending")
        .values(state="deciding", decided_by=actor, decided_at=at, resolution=token)
    )
    return getattr(taken, "rowcount", 0) == 1


def decide_claimed(
    session: Session, proposal_id: int, token: str | None, values: Mapping[str, Any]
) -> bool:
    """Whether the proposal took `values` (its decided state): only while it is still held by
    the claim `token`, or was released to pending meanwhile (a lapsed lease whose decision had
    not written yet): either way this decision may complete it."""
    row = tables.ProposalRow
    held = and_(col(row.state) == "deciding", col(row.resolution) == token)
    still_ours = and_(col(row.id) == proposal_id, or_(held, col(row.state) == "pending"))
    done = session.execute(update(tables.ProposalRow).where(still_ours).values(**values))
    return getattr(done, "rowcount", 0) == 1


def update_held(
    session: Session, proposal_id: int, token: str | None, values: Mapping[str, Any]
) -> bool:
    """Whether the proposal still deciding under exactly the claim `token` took `values`."""
    held = col(_ROW.resolution) == token if token else col(_ROW.resolution).is_(None)
    done = session.execute(
        update(_ROW)
        .where(col(_ROW.id) == proposal_id, col(_ROW.state) == "deciding", held)
        .values(**values)
    )
    return getattr(done, "rowcount", 0) == 1


def deciding_claims(
    session: Session, only: int | None = None
) -> list[tuple[int | None, str | None, datetime | None, str | None]]:
    """(id, resolution, decided_at, decided_by) of the proposals deciding (of `only`, if
    given). One indexed read when nothing is deciding."""
    query = select(col(_ROW.id), col(_ROW.resolution), col(_ROW.decided_at),
                   col(_ROW.decided_by)).where(col(_ROW.state) == "deciding")  # fmt: skip
    if only is not None:
        query = query.where(col(_ROW.id) == only)
    return [(id_, token, at, actor) for id_, token, at, actor in session.execute(query)]


def facts_written_since(
    session: Session,
    *,
    caller: str,
    agent_session: str,
    since: datetime | None,
    keyed: tuple[str, Any] | None = None,
    content_hash: str | None = None,
) -> ScalarResult[tables.FactRow]:
    """The facts of an agent (caller and session) created at or after `since`, oldest first:
    those under the key `keyed` (namespace, key) when given, else those with `content_hash`."""
    facts = tables.FactRow
    query = select(facts).where(
        col(facts.caller) == caller,
        col(facts.session) == agent_session,
        col(facts.created_at) >= since,
    )
    if keyed is not None:
        query = query.where(col(facts.kv_namespace) == keyed[0],
                            col(facts.kv_key) == keyed[1])  # fmt: skip
    else:
        query = query.where(col(facts.content_hash) == content_hash)
    return session.scalars(query.order_by(col(facts.created_at)))


def resolved_by_another(session: Session, uri: str, proposal_id: int | None) -> bool:
    """Whether a proposal other than `proposal_id` has the fact `uri` as its resolution."""
    other = select(col(_ROW.id)).where(col(_ROW.resolution) == uri, col(_ROW.id) != proposal_id)
    return session.execute(other.limit(1)).first() is not None


def set_proposal_state(
    session: Session, proposal_id: int, after: Mapping[str, Any], actor: str | None, now: datetime
) -> None:
    """Set the proposal's state as `after` has it: pending again (an undo), or decided (a
    redo)."""
    state = str(after.get("state", "pending"))
    decided = state != "pending"
    session.execute(
        update(tables.ProposalRow)
        .where(col(tables.ProposalRow.id) == proposal_id)
        .values(
            state=state,
            resolution=after.get("resolution") if decided else None,
            decided_at=now if decided else None,
            decided_by=actor if decided else None,
        )
    )


def proposals_in_states(session: Session, states: Iterable[str]) -> Sequence[tables.ProposalRow]:
    """The proposals in one of `states`, oldest first."""
    return session.scalars(
        select(tables.ProposalRow)
        .where(col(tables.ProposalRow.state).in_(states))
        .order_by(col(tables.ProposalRow.id))
    ).all()
