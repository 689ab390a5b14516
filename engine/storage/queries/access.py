"""The access layer's SQL (engine/access: tokens.py, write_requests.py): API tokens by name,
digest and state, and the pruning of old write records. Each takes the session its caller
opened, but for `live_grant_row`, which reads on a connection of its own."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Row, delete, select
from sqlalchemy.orm import Session

from engine.storage.schema import tables


def live_token_named(session: Session, name: str) -> tables.ApiTokenRow | None:
    """The live (unrevoked) token of `name`, or None."""
    return session.scalars(
        select(tables.ApiTokenRow)
        .where(tables.ApiTokenRow.name == name)
        .where(tables.ApiTokenRow.revoked_at.is_(None))
    ).first()


def live_grant_row(db: Engine, digest: str) -> Row[Any] | None:
    """The grant columns (id, name, scopes, namespaces, can_write, can_curate, egress) of the
    live token with this digest, or None. One indexed read, in SQLAlchemy Core (an ORM session
    cost a write's HTTP handling a fifth more)."""
    table = tables.ApiTokenRow.__table__
    query = select(
        table.c.id, table.c.name, table.c.scopes, table.c.namespaces, table.c.can_write,
        table.c.can_curate, table.c.egress,
    ).where(table.c.digest == digest, table.c.revoked_at.is_(None))  # fmt: skip
    with db.connect() as connection:
        row: Row[Any] | None = connection.execute(query).first()
    return row


def tokens_by_name(session: Session, *, include_revoked: bool) -> list[tables.ApiTokenRow]:
    """The tokens, by name: the live ones, or every one with `include_revoked`."""
    query = select(tables.ApiTokenRow).order_by(tables.ApiTokenRow.name)
    if not include_revoked:
        query = query.where(tables.ApiTokenRow.revoked_at.is_(None))
    return list(session.scalars(query))


def live_tokens(session: Session) -> Sequence[tables.ApiTokenRow]:
    """Every live (unrevoked) token."""
    return session.scalars(
        select(tables.ApiTokenRow).where(tables.ApiTokenRow.revoked_at.is_(None))
    ).all()


def prune_write_requests(session: Session, before: datetime) -> None:
    """Delete the write records made before `before` (not committed: the caller commits)."""
    session.execute(
        delete(tables.WriteRequestRow).where(tables.WriteRequestRow.created_at < before)
    )
