"""The keyed API's SQL (engine/keyed: service.py, query.py, search.py): a key's chain of
revisions, the live heads of a namespace, and the held keyed writes waiting for review. Each
takes the session its caller opened."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract import visibility
from engine.storage.reads.records import KEYED_TAG_SEPARATOR
from engine.storage.schema import tables

_SQL_INT_MAX = 2**63 - 1


def _fact_columns() -> Any:
    """The facts table's columns, for queries (typed loosely, as SQLModel fields are not)."""
    return tables.FactRow.__table__.c


def key_chain(session: Session, collection: str, namespace: str, key: str) -> list[tables.FactRow]:
    """Every revision of `key` in `namespace`, oldest first (by revision, then write time)."""
    fact = _fact_columns()
    return list(
        session.scalars(
            select(tables.FactRow)
            .where(fact.collection == collection)
            .where(fact.kv_namespace == namespace)
            .where(fact.kv_key == key)
            .order_by(fact.kv_revision, fact.created_at)
        )
    )


def key_head(session: Session, collection: str, namespace: str, key: str) -> tables.FactRow | None:
    """The last revision of `key` in `namespace` (its chain's head), or None if never written."""
    chain = key_chain(session, collection, namespace, key)
    return chain[-1] if chain else None


def live_keyed_heads(session: Session, collection: str, namespace: str) -> list[tables.FactRow]:
    """The namespace's keyed facts that are neither superseded nor retired (expired ones
    included), oldest write first."""
    fact = _fact_columns()
    return list(
        session.scalars(
            select(tables.FactRow)
            .where(fact.collection == collection)
            .where(fact.kv_namespace == namespace)
            .where(fact.kv_key.is_not(None))
            .where(visibility.live_clause(fact))  # expiry: checked at query time
            .order_by(fact.created_at, fact.record_id)
        ).all()
    )


def current_keyed_heads_page(
    session: Session,
    after: tuple[int, datetime, str] | None,
    limit: int,
    *,
    collection: str,
    namespace: str,
    topic: str | None,
    tag: str | None,
    since_ms: int | None,
    until_ms: int | None,
    now: datetime,
) -> list[tables.FactRow]:
    """Up to `limit` live, unexpired keyed heads of the namespace passing the filters, newest
    event first (then newest write, then record id), after the keyset position `after`
    (event time in ms, write time, record id)."""
    fact = _fact_columns()
    query = (
        select(tables.FactRow)
        .where(fact.collection == collection)
        .where(fact.kv_namespace == namespace)
        .where(fact.kv_key.is_not(None))
        .where(visibility.current_clause(fact, now))
        .order_by(
            fact.kv_occurred_at_ms.desc(),
            fact.created_at.desc(),
            fact.record_id.desc(),
        )
    )
    if topic is not None:
        query = query.where(fact.kv_topic == topic)
    if tag is not None:
        escaped = tag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = f"%{KEYED_TAG_SEPARATOR}{escaped}{KEYED_TAG_SEPARATOR}%"
        query = query.where(fact.kv_tags.like(pattern, escape="\\"))
    if since_ms is not None:
        query = query.where(fact.kv_occurred_at_ms >= min(since_ms, _SQL_INT_MAX))
    if until_ms is not None:
        query = query.where(fact.kv_occurred_at_ms <= min(until_ms, _SQL_INT_MAX))
    if after is not None:
        occurred, written, record_id = after
        query = query.where(
            or_(
                fact.kv_occurred_at_ms < occurred,
                and_(
                    fact.kv_occurred_at_ms == occurred,
                    or_(
                        fact.created_at < written,
                        and_(
                            fact.created_at == written,
                            fact.record_id < record_id,
                        ),
                    ),
                ),
            )
        )
    return list(session.scalars(query.limit(limit)).all())


def pending_held_writes(
    session: Session, decision: str, caller: str, text: str
) -> Sequence[tables.ProposalRow]:
    """The pending proposals of `decision` (held keyed writes) from `caller` with this text."""
    return session.scalars(
        select(tables.ProposalRow)
        .where(col(tables.ProposalRow.state) == "pending")
        .where(col(tables.ProposalRow.decision) == decision)
        .where(col(tables.ProposalRow.caller) == caller)
        .where(col(tables.ProposalRow.text) == text)
    ).all()
