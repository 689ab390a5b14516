"""The curation modules' SQL (engine/curation: the decision log, undo, duplicates, recall
labels, calibration); the review queue's and the claims' are in review.py. Each helper takes
the session explicitly; none commits (the caller's transaction decides)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract.errors import MemoryFailure
from engine.storage.reads.records import get_fact
from engine.storage.schema import tables


def current_fact(session: Session, ref: str) -> tables.FactRow:
    """The current fact `ref`; MEMORY_NOT_FOUND when there is none, MEMORY_SUPERSEDE_CONFLICT
    when it was superseded or retired."""
    row = get_fact(session, ref=ref)
    if row is None:
        raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {ref}; recall or list to find its uri.")
    if row.superseded_by or row.retired_at:
        raise MemoryFailure("MEMORY_SUPERSEDE_CONFLICT", f"{row.uri} is not current.")
    return row


def latest_decisions(session: Session, limit: int) -> Sequence[tables.DecisionRow]:
    """The decision log's `limit` newest rows, newest first."""
    return session.scalars(
        select(tables.DecisionRow).order_by(col(tables.DecisionRow.id).desc()).limit(limit)
    ).all()


def decisions_by(session: Session, actor: str) -> Sequence[tables.DecisionRow]:
    """The actor's decisions, newest first."""
    return session.scalars(
        select(tables.DecisionRow)
        .where(col(tables.DecisionRow.actor) == actor)
        .order_by(col(tables.DecisionRow.id).desc())
    ).all()


def decisions_with_actions(session: Session, actions: list[str]) -> Sequence[tables.DecisionRow]:
    """The decisions whose action is one of `actions`, oldest first."""
    return session.scalars(
        select(tables.DecisionRow)
        .where(col(tables.DecisionRow.action).in_(actions))
        .order_by(col(tables.DecisionRow.id))
    ).all()


def undo_decisions(session: Session) -> Sequence[tables.DecisionRow]:
    """The decisions that are undos (`undo:<action>`)."""
    return session.scalars(
        select(tables.DecisionRow).where(col(tables.DecisionRow.action).like("undo:%"))
    ).all()


def record_ids_by_uri(session: Session, uris: Iterable[str]) -> dict[str, str]:
    """uri -> record id of the facts with one of `uris`."""
    rows = session.execute(
        select(col(tables.FactRow.uri), col(tables.FactRow.record_id)).where(
            col(tables.FactRow.uri).in_(uris)
        )
    ).all()
    return dict(rows)


def delete_scopes_and_embeddings(session: Session, record_id: str) -> None:
    """Delete the scope and embedding rows of the fact `record_id`."""
    for table in (tables.FactScopeRow, tables.EmbeddingRow):
        session.execute(delete(table).where(col(table.record_id) == record_id))


def recall_labels(session: Session, *, digest: str, actor: str) -> Sequence[tables.RecallLabelRow]:
    """The person's labels on the recall with this receipt digest."""
    return session.scalars(
        select(tables.RecallLabelRow).where(
            col(tables.RecallLabelRow.digest) == digest,
            col(tables.RecallLabelRow.actor) == actor,
        )
    ).all()


def recall_labels_by(session: Session, actor: str) -> Sequence[tables.RecallLabelRow]:
    """The person's labels on every recall."""
    return session.scalars(
        select(tables.RecallLabelRow).where(col(tables.RecallLabelRow.actor) == actor)
    ).all()
