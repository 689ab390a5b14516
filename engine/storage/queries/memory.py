"""The memory modules' SQL (engine/memory): the Library's and the lists' filtered pages and
counts (browse.py, library.py), what a recall left out (why_not.py), curation fields as of a
past moment (as_of_fields.py), the facts behind resources (resources.py) and the stored
receipts (receipts.py). Each helper takes the session explicitly; none commits (the caller's
transaction decides)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, String, and_, case, delete, func, literal, or_, select, type_coerce
from sqlalchemy.orm import Session

from engine.contract import visibility
from engine.contract.normalize import iso_utc
from engine.storage.reads import IN_CHUNK, chunks
from engine.storage.schema import tables

# Columns as SQL expressions: SQLModel types a table's attributes as their Python values.
_FACT: Any = tables.FactRow
_SCOPE: Any = tables.FactScopeRow
_DECISION: Any = tables.DecisionRow
_RECEIPT: Any = tables.ReceiptRow


@dataclass(frozen=True)
class Exclusions:
    """What a filter's `!` terms leave out: facts containing any of `words`, in any of
    `scopes` or `collections`, or with any of `statuses`."""

    words: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()


@dataclass(frozen=True)
class FactFilter:
    """Which facts a page or a count keeps (engine/memory/browse.py list_facts): `text` keeps
    facts containing every word (`invert`: facts that do not); with `as_of` the store is seen
    as it was then."""

    now: datetime
    status: str | None = None
    scope: str | None = None
    collection: str | None = None
    text: str | None = None
    invert: bool = False
    as_of: datetime | None = None
    exclude: Exclusions | None = None


# -- facts by status and filter (browse.py, library.py) ------------------------------------


def _on_sqlite(session: Session) -> bool:
    """SQLite, whose LIKE matches the words (it ignores ASCII case) and whose ISO-text times
    sort as text."""
    return session.get_bind().dialect.name == "sqlite"


def word_matches_narrow(db: Engine) -> bool:
    """Whether the facts a longer text filter keeps are always among those a filter it
    contains kept: SQLite's LIKE folds ASCII case only. PostgreSQL's ILIKE folds case by the
    collation (a Turkish dotless i, a Greek final sigma), so a word inside another may match
    there where the other does not."""
    return db.dialect.name == "sqlite"


def status_clause(status: str | None, now: datetime, as_of: datetime | None) -> Any | None:
    """The facts with `status`, now or as of a past moment (by what had happened to them by
    then); None for no (or no known) status. NULL-safe, so that `~` of it is its complement."""
    fact = _FACT
    if as_of is not None:
        superseded = and_(fact.superseded_at.is_not(None), fact.superseded_at <= as_of)
        retired = and_(fact.retired_at.is_not(None), fact.retired_at <= as_of)
        expired = visibility.expired_clause(fact, as_of)
        by_status = {
            "current": and_(~superseded, ~retired, ~expired),
            "superseded": superseded,
            "retired": and_(~superseded, retired),
            "expired": and_(~superseded, ~retired, expired),
        }
    else:
        expired = visibility.expired_clause(fact, now)
        by_status = {
            "current": visibility.current_clause(fact, now),
            "superseded": fact.superseded_by.is_not(None),
            "retired": fact.retired_at.is_not(None),
            "expired": expired,
        }
    return by_status.get(status or "")


def attention_clause(now: datetime) -> Any:
    """The facts needing attention: still to be confirmed, or stale at `now`."""
    workbench = _FACT.workbench
    unconfirmed = workbench["usePolicy"]["requiresUserConfirmation"].as_boolean()
    # Both sides are ISO 8601 UTC strings of the same shape, so text order is time order.
    stale = workbench["freshness"]["staleAfter"].as_string() <= iso_utc(now)
    return or_(unconfirmed.is_(True), stale)


def _filtered(query: Any, where: FactFilter, session: Session) -> Any:
    fact = _FACT
    exclude = where.exclude or Exclusions()

    def says(word: str) -> Any:
        """The fact's text holds `word`, any case. SQLite's LIKE already ignores ASCII case,
        and its lower() folds no more than that: the ILIKE SQLAlchemy writes for SQLite,
        lower(text) LIKE lower(?), matched the same rows a third slower at 100k facts."""
        pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        if _on_sqlite(session):
            return fact.text.like(pattern, escape="\\")
        return fact.text.ilike(pattern, escape="\\")

    if where.scope:
        query = query.where(
            fact.record_id.in_(select(_SCOPE.record_id).where(_SCOPE.scope == where.scope))
        )
    if exclude.scopes:
        query = query.where(
            fact.record_id.not_in(select(_SCOPE.record_id).where(_SCOPE.scope.in_(exclude.scopes)))
        )
    if where.collection:
        # `|| ''` keeps SQLite from answering through the collection index: without table
        # statistics it takes an equality for selective, and one lookup per row of a large
        # collection cost 5x a plain scan (0.2 s at 100k). A scan is bounded; same result.
        query = query.where(fact.collection.concat("") == where.collection)
    if exclude.collections:
        query = query.where(fact.collection.not_in(exclude.collections))
    if where.text:
        words = [says(word) for word in where.text.split()]
        query = query.where(~and_(*words) if where.invert else and_(*words))
    for word in exclude.words:
        query = query.where(~says(word))
    if where.as_of is not None:
        query = query.where(fact.created_at <= where.as_of)  # the facts the store held then
    clause = status_clause(where.status, where.now, where.as_of)
    if clause is not None:
        query = query.where(clause)
    for unwanted in exclude.statuses:
        if (clause := status_clause(unwanted, where.now, where.as_of)) is not None:
            query = query.where(~clause)
    return query


def fact_page(
    session: Session, where: FactFilter, *, offset: int, limit: int
) -> list[tables.FactRow]:
    """One page of the facts `where` keeps, newest first (then by record id)."""
    query = _filtered(select(_FACT), where, session)
    order = (_FACT.created_at.desc(), _FACT.record_id)
    return list(session.scalars(query.order_by(*order).offset(offset).limit(limit)))


def count_facts(session: Session, where: FactFilter) -> int:
    """How many facts `where` keeps."""
    return int(
        session.scalar(_filtered(select(func.count()).select_from(_FACT), where, session)) or 0
    )


def matching_fact_ids(
    session: Session, where: FactFilter, within: Sequence[str] | None
) -> list[str]:
    """The record ids of the facts `where` keeps, newest first (then by record id); only
    among `within` when given (the matches of a filter this one narrows), a few hundred ids
    at a time."""
    fact = _FACT
    order = (fact.created_at.desc(), fact.record_id)
    if _on_sqlite(session):
        # On SQLite `|| ''` (the same order: times are stored as ISO text) keeps it from
        # walking the created_at index, a lookup per row: a scan and a sort took 30 ms for
        # 28k matches, the walk 140.
        as_text = type_coerce(fact.created_at, String).concat(literal("", String))
        order = (as_text.desc(), fact.record_id)
    query = _filtered(select(fact.record_id), where, session)
    if within is None:  # Core, not the ORM's loading: 28k ids cost 60 ms through it
        return list(session.connection().execute(query.order_by(*order)).scalars())
    keys: list[tuple[Any, str]] = []
    for chunk in chunks(within, IN_CHUNK):
        found = session.execute(
            query.add_columns(fact.created_at).where(fact.record_id.in_(chunk))
        ).all()
        keys += [(row[1], str(row[0])) for row in found]
    # The same order as the query's: newest first, then by record id.
    keys.sort(key=lambda key: key[1])
    keys.sort(key=lambda key: key[0], reverse=True)
    return [record_id for _, record_id in keys]


def facts_by_ids_in_chunks(session: Session, ids: Sequence[str]) -> list[tables.FactRow]:
    """The facts with these record ids (in no order), IN_CHUNK ids to a statement."""
    rows: list[tables.FactRow] = []
    for chunk in chunks(ids, IN_CHUNK):
        rows += session.scalars(select(_FACT).where(_FACT.record_id.in_(chunk))).all()
    return rows


def facts_by_ids(session: Session, ids: Collection[str]) -> list[tables.FactRow]:
    """The facts with these record ids, in no order (one statement)."""
    return list(session.scalars(select(_FACT).where(_FACT.record_id.in_(ids))))


def facts_by_ids_or_uris(session: Session, refs: Collection[str]) -> list[tables.FactRow]:
    """The facts whose record id or uri is one of `refs`, in no order."""
    query = select(_FACT).where(_FACT.record_id.in_(refs) | _FACT.uri.in_(refs))
    return list(session.scalars(query).all())


def recent_fact_texts(session: Session, where: FactFilter, limit: int) -> list[tuple[str, str]]:
    """(record id, text) of the `limit` newest facts `where` keeps, newest first."""
    # The ids and texts only: whole rows for 5,000 facts cost most of a fuzzy search.
    query = _filtered(select(_FACT.record_id, _FACT.text), where, session)
    order = (_FACT.created_at.desc(), _FACT.record_id)
    return list(session.execute(query.order_by(*order).limit(limit)).all())


def count_needing_attention(session: Session, where: FactFilter) -> int:
    """How many facts `where` keeps need attention (attention_clause)."""
    query = _filtered(select(func.count()).select_from(_FACT), where, session)
    return int(session.scalar(query.where(attention_clause(where.now))) or 0)


def facts_needing_attention(
    session: Session, where: FactFilter, *, offset: int, limit: int
) -> list[tables.FactRow]:
    """One page of the facts `where` keeps that need attention, newest first (then by record
    id, as every other tab: facts written in one instant must not come back in the order a
    query plan happens to read them)."""
    query = _filtered(select(_FACT), where, session).where(attention_clause(where.now))
    order = (_FACT.created_at.desc(), _FACT.record_id)
    ordered = query.order_by(*order).offset(offset).limit(limit)
    return list(session.scalars(ordered).all())


def distinct_scopes(session: Session) -> list[str]:
    """Every scope some fact has, in order."""
    return list(session.scalars(select(_SCOPE.scope).distinct().order_by(_SCOPE.scope)))


def decisions_with_actions(session: Session, actions: Collection[str]) -> list[tables.DecisionRow]:
    """The decision log's rows with one of `actions`, in no order."""
    query = select(_DECISION).where(_DECISION.action.in_(actions))
    return list(session.scalars(query).all())


def tab_tallies(
    session: Session, statuses: Sequence[str], now: datetime, as_of: datetime | None
) -> tuple[Any, ...]:
    """In one pass over the facts, how many have each of `statuses` (each status_clause) and,
    now (`as_of` None), then how many current ones need attention, the first expiry after
    `now` and the first staleAfter after it (ISO text); as of a past time only the facts
    created by then count."""
    fact = _FACT
    clauses: dict[str, Any] = {s: status_clause(s, now, as_of) for s in statuses}
    tallies: list[Any] = [func.sum(case((clauses[s], 1), else_=0)) for s in statuses]
    current = clauses["current"]
    if as_of is None:
        stale_after = fact.workbench["freshness"]["staleAfter"].as_string()
        tallies += [
            func.sum(case((and_(current, attention_clause(now)), 1), else_=0)),
            func.min(case((fact.expires_at > now, fact.expires_at))),
            func.min(case((stale_after > iso_utc(now), stale_after))),
        ]
    query = select(*tallies).select_from(fact)
    if as_of is not None:
        query = query.where(fact.created_at <= as_of)  # the facts the store held then
    return tuple(session.execute(query).one())


# -- a past moment (why_not.py, as_of_fields.py) -------------------------------------------


def fact_ids_created_after(session: Session, moment: datetime) -> list[str]:
    """The record ids of the facts created after `moment`, in no order."""
    return list(session.scalars(select(_FACT.record_id).where(_FACT.created_at > moment)))


def count_gone_since(session: Session, moment: datetime, now: datetime) -> int:
    """How many facts current at `moment` have since been superseded, retired or expired (by
    `now`)."""
    fact = _FACT
    superseded, retired = fact.superseded_at, fact.retired_at
    left = or_(
        and_(superseded.is_not(None), superseded > moment),
        and_(retired.is_not(None), retired > moment),
        visibility.expired_clause(fact, now),
    )
    current_then = status_clause("current", moment, moment)
    assert current_then is not None
    query = (
        select(func.count()).select_from(fact).where(fact.created_at <= moment, current_then, left)
    )
    return int(session.scalar(query) or 0)


def count_current_in(
    session: Session, scopes: Sequence[str], collection: str | None, moment: datetime
) -> int:
    """How many facts current at `moment` share one of `scopes` (in `collection`, when one is
    named)."""
    fact = _FACT
    current = status_clause("current", moment, moment)  # as browse sees it then
    assert current is not None
    in_scopes = select(_SCOPE.record_id).where(_SCOPE.scope.in_(scopes))
    query = (
        select(func.count())
        .select_from(fact)
        .where(fact.record_id.in_(in_scopes), fact.created_at <= moment, current)
    )
    if collection is not None:
        query = query.where(fact.collection == collection)
    return int(session.scalar(query) or 0)


def decision_details_since(
    session: Session, targets: Sequence[str], moment: datetime
) -> list[tuple[Any, Any]]:
    """(target, detail) of the decisions on `targets` after `moment`, oldest first."""
    query = (
        select(_DECISION.target, _DECISION.detail)
        .where(_DECISION.at > moment, _DECISION.target.in_(list(targets)))
        .order_by(_DECISION.at, _DECISION.id)
    )
    return list(session.execute(query).all())


# -- stored receipts (receipts.py) ---------------------------------------------------------


def receipts_newest_first(session: Session, limit: int | None = None) -> list[tables.ReceiptRow]:
    """The stored receipts (the newest `limit` when given), newest first."""
    query = select(_RECEIPT).order_by(_RECEIPT.issued_at.desc())
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query).all())


def count_receipts_issued_before(session: Session, moment: datetime) -> int:
    """How many stored receipts were issued before `moment`."""
    query = select(func.count()).select_from(_RECEIPT).where(_RECEIPT.issued_at < moment)
    return int(session.scalar(query) or 0)


def receipts_with_digests(session: Session, digests: Sequence[str]) -> list[tables.ReceiptRow]:
    """The stored receipts with these digests, in no order."""
    query = select(_RECEIPT).where(_RECEIPT.digest.in_(list(digests)))
    return list(session.scalars(query).all())


def receipts_issued_before(session: Session, moment: datetime) -> list[tables.ReceiptRow]:
    """The stored receipts issued before `moment`, in no order."""
    return list(session.scalars(select(_RECEIPT).where(_RECEIPT.issued_at < moment)).all())


def delete_recall_labels(session: Session, digests: Sequence[str]) -> None:
    """Delete a person's labels on the recalls of these receipts (engine/curation/labels.py)."""
    label: Any = tables.RecallLabelRow
    session.execute(delete(label).where(label.digest.in_(digests)))
