"""Import and export's SQL (engine/interop: import_run.py, import_proposals.py, transfer.py,
ob1_recall.py): the facts they read, by record id or all of them. Each takes the session its
caller opened (for an import's proposals, the bulk write's transaction)."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.storage.schema import tables


def facts_by_record_ids(session: Session, record_ids: Collection[str]) -> list[tables.FactRow]:
    """The facts with these record ids (those found), in no set order."""
    return list(
        session.scalars(select(tables.FactRow).where(col(tables.FactRow.record_id).in_(record_ids)))
    )


def all_facts(session: Session) -> list[tables.FactRow]:
    """Every fact of the store, oldest write first (then by record id)."""
    return list(
        session.scalars(
            select(tables.FactRow).order_by(
                col(tables.FactRow.created_at), col(tables.FactRow.record_id)
            )
        )
    )


def all_record_ids(session: Session) -> set[str]:
    """The record id of every fact of the store."""
    return set(session.scalars(select(col(tables.FactRow.record_id))))
