"""Read-only views for curation surfaces (the workbench, `gno-tui review --list`, exports):
pages of facts with their state, a fact's chain, receipts with usage, near-duplicate pairs,
fence previews and effective egress policy. Nothing here writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import String, and_, func, literal, or_, select, type_coerce
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import POLICY_STRICTNESS, digest_of, iso_utc
from engine.retrieval.seam import DuplicatePair, Visibility
from engine.storage.reads import IN_CHUNK, chunks, visibility
from engine.storage.reads.records import get_fact
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

# The decision-log action of a keep-both verdict (engine/curation/duplicates.py).
KEEP_BOTH = "keep-both"
STATUSES = ("current", "superseded", "retired", "expired")


def status_of(row: tables.FactRow, now: datetime) -> str:
    if row.superseded_by:
        return "superseded"
    if row.retired_at:
        return "retired"
    if visibility.is_expired(row.expires_at, now):
        return "expired"
    return "current"


@dataclass(frozen=True)
class FactPage:
    rows: list[tables.FactRow]
    total: int  # how many facts match the filter, across all pages
    # Every match's record id in page order, when a text filter was searched in one pass
    # (list_facts): what narrowing the same filter by more text may search within.
    matched: tuple[str, ...] | None = None


def status_at(row: tables.FactRow, moment: datetime) -> str:
    """A fact's status as the store knew it at `moment` (record time), or "unborn".

    A retire undone by a restore leaves no time on the row (the log has it), so a fact
    retired and restored since counts as not retired at any earlier moment."""
    if row.created_at is not None and row.created_at > moment:
        return "unborn"
    if row.superseded_at is not None and row.superseded_at <= moment:
        return "superseded"
    if row.retired_at is not None and row.retired_at <= moment:
        return "retired"
    if visibility.is_expired(row.expires_at, moment):
        return "expired"
    return "current"


@dataclass(frozen=True)
class Exclusions:
    """What a filter's `!` terms leave out: facts containing any of `words`, in any of
    `scopes` or `collections`, or with any of `statuses`."""

    words: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()


def _status_clause(status: str | None, now: datetime, as_of: datetime | None) -> Any | None:
    """The facts with `status`, now or as of a past moment (by what had happened to them by
    then); None for no (or no known) status. NULL-safe, so that `~` of it is its complement."""
    fact = tables.FactRow
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


def _filtered(
    query: Any,
    *,
    status: str | None,
    scope: str | None,
    collection: str | None,
    text: str | None,
    now: datetime,
    invert: bool = False,
    as_of: datetime | None = None,
    exclude: Exclusions | None = None,
    sqlite: bool = False,
) -> Any:
    fact = tables.FactRow
    exclude = exclude or Exclusions()

    def says(word: str) -> Any:
        """The fact's text holds `word`, any case. SQLite's LIKE already ignores ASCII case,
        and its lower() folds no more than that: the ILIKE SQLAlchemy writes for SQLite,
        lower(text) LIKE lower(?), matched the same rows a third slower at 100k facts."""
        pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        if sqlite:
            return fact.text.like(pattern, escape="\\")
        return fact.text.ilike(pattern, escape="\\")

    if scope:
        query = query.where(
            fact.record_id.in_(
                select(tables.FactScopeRow.record_id).where(tables.FactScopeRow.scope == scope)
            )
        )
    if exclude.scopes:
        query = query.where(
            fact.record_id.not_in(
                select(tables.FactScopeRow.record_id).where(
                    tables.FactScopeRow.scope.in_(exclude.scopes)
                )
            )
        )
    if collection:
        # `|| ''` keeps SQLite from answering through the collection index: without table
        # statistics it takes an equality for selective, and one lookup per row of a large
        # collection cost 5x a plain scan (0.2 s at 100k). A scan is bounded; same result.
        query = query.where(fact.collection.concat("") == collection)
    if exclude.collections:
        query = query.where(fact.collection.not_in(exclude.collections))
    if text:
        words = [says(word) for word in text.split()]
        query = query.where(~and_(*words) if invert else and_(*words))
    for word in exclude.words:
        query = query.where(~says(word))
    if as_of is not None:
        query = query.where(fact.created_at <= as_of)  # the facts the store held then
    clause = _status_clause(status, now, as_of)
    if clause is not None:
        query = query.where(clause)
    for unwanted in exclude.statuses:
        if (clause := _status_clause(unwanted, now, as_of)) is not None:
            query = query.where(~clause)
    return query


def list_facts(
    engine: MemoryEngine,
    *,
    status: str | None = None,
    scope: str | None = None,
    collection: str | None = None,
    text: str | None = None,
    invert: bool = False,
    offset: int = 0,
    limit: int = 200,
    as_of: datetime | None = None,
    exclude: Exclusions | None = None,
    within: Sequence[str] | None = None,
    every_id: bool = False,
) -> FactPage:
    """One page of facts, newest first; the total counts every match so a UI can page lazily.
    `text` keeps facts containing every word (`invert`: facts that do not); `exclude` leaves
    out what a filter's `!` terms name. With `as_of` the store is seen as it was then: only
    facts created by then, statuses as of then. `within` (with a text filter): the matches
    of a filter this one narrows, the only facts that can match it (library.py); with it, or
    with `every_id`, the page also holds every match's id (`matched`). Both apply to a text
    filter that keeps its matches, not to an `invert`ed one."""
    now = engine.now()
    options: dict[str, Any] = {
        "status": status,
        "scope": scope,
        "collection": collection,
        "text": text,
        "now": now,
        "invert": invert,
        "as_of": as_of,
        "exclude": exclude,
        "sqlite": engine.db.dialect.name == "sqlite",
    }
    fact = tables.FactRow
    order = (fact.created_at.desc(), fact.record_id)
    with Session(engine.db, expire_on_commit=False) as session:
        if text and not invert and (every_id or within is not None):
            # A text filter reads every text anyway: one pass gives the matches' ids in
            # order, hence the total and the page, instead of a page's pass and a count's
            # (two scans of 100k texts: 58 ms for a word in 400 facts). It costs more when
            # many facts match (65 ms against 34 for one letter, in 28k facts: the page's
            # pass stops at its 200th match), so the Library asks for it only once a filter
            # is known to match few. On SQLite
            # `|| ''` (the same order: times are stored as ISO text) keeps it from walking
            # the created_at index, a lookup per row: a scan and a sort took 30 ms for
            # 28k matches, the walk 140.
            if options["sqlite"]:
                as_text = type_coerce(fact.created_at, String).concat(literal("", String))
                order = (as_text.desc(), fact.record_id)
            query = _filtered(select(fact.record_id), **options)
            ids = _matching_ids(session, query, order, within)
            wanted = ids[offset : offset + limit]
            found = {row.record_id: row for row in _rows_by_id(session, wanted)}
            rows = [found[record_id] for record_id in wanted if record_id in found]
            return FactPage(rows, len(ids), tuple(ids))
        rows = list(
            session.scalars(
                _filtered(select(fact), **options).order_by(*order).offset(offset).limit(limit)
            )
        )
        if len(rows) < limit and (rows or offset == 0):
            # A short page is the last one: the total is known without a second pass over
            # the table (a filter by a rare word scanned 100k texts twice for it).
            total = offset + len(rows)
        else:
            counted = _filtered(select(func.count()).select_from(fact), **options)
            total = session.scalar(counted) or 0
    return FactPage(list(rows), int(total))


def _matching_ids(
    session: Session, query: Any, order: tuple[Any, ...], within: Sequence[str] | None
) -> list[str]:
    """The record ids `query` selects, in `order`; only among `within` when given (the
    matches of a filter this one narrows), a few hundred ids at a time."""
    if within is None:  # Core, not the ORM's loading: 28k ids cost 60 ms through it
        return list(session.connection().execute(query.order_by(*order)).scalars())
    fact = tables.FactRow
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


def _rows_by_id(session: Session, ids: Sequence[str]) -> list[tables.FactRow]:
    fact = tables.FactRow
    rows: list[tables.FactRow] = []
    for chunk in chunks(ids, IN_CHUNK):
        rows += session.scalars(select(fact).where(fact.record_id.in_(chunk))).all()
    return rows


# How many recent facts the typo-tolerant fallback of `search_facts` looks through.
FUZZY_WINDOW = 5000


def search_facts(
    engine: MemoryEngine,
    *,
    text: str,
    status: str | None = None,
    scope: str | None = None,
    collection: str | None = None,
    limit: int = 200,
    as_of: datetime | None = None,
    exclude: Exclusions | None = None,
    within: Sequence[str] | None = None,
    every_id: bool = False,
) -> FactPage:
    """Filter as you type: facts containing every word; when none does, the recent facts
    closest to the text by rapidfuzz (so a typo still finds its fact). `exclude` applies to
    both; `within` and `every_id` as list_facts has them."""
    page = list_facts(
        engine,
        status=status,
        scope=scope,
        collection=collection,
        text=text,
        limit=limit,
        as_of=as_of,
        exclude=exclude,
        within=within,
        every_id=every_id,
    )
    if page.total or not text.strip():
        return page
    from rapidfuzz import fuzz, process

    fact, now = tables.FactRow, engine.now()
    narrowed: dict[str, Any] = {
        "status": status,
        "scope": scope,
        "collection": collection,
        "as_of": as_of,
    }
    # The window's ids and texts only: whole rows for 5,000 facts cost most of the fallback.
    recent = _filtered(
        select(fact.record_id, fact.text), text=None, now=now, exclude=exclude, **narrowed
    )
    with Session(engine.db, expire_on_commit=False) as session:
        window = session.execute(
            recent.order_by(fact.created_at.desc(), fact.record_id).limit(FUZZY_WINDOW)
        ).all()
        found = process.extract(
            text.lower(),
            [row_text.lower() for _, row_text in window],
            scorer=fuzz.partial_ratio,
            score_cutoff=75,
            limit=limit,
        )
        ids = [window[index][0] for _, _, index in found]
        rows = {
            row.record_id: row
            for row in session.scalars(select(fact).where(fact.record_id.in_(ids)))
        }
    kept = [rows[record_id] for record_id in ids if record_id in rows]  # (gone meanwhile)
    return FactPage(kept, len(kept))


def _attention_clause(now: datetime) -> Any:
    workbench = tables.FactRow.workbench
    unconfirmed = workbench["usePolicy"]["requiresUserConfirmation"].as_boolean()
    # Both sides are ISO 8601 UTC strings of the same shape, so text order is time order.
    stale = workbench["freshness"]["staleAfter"].as_string() <= iso_utc(now)
    return or_(unconfirmed.is_(True), stale)


def is_stale(row: tables.FactRow, now: datetime) -> bool:
    """Its freshness ran out (`stale_after` passed): shown as stale until confirmed again."""
    from engine.contract.normalize import parse_iso

    stale_after = row.workbench.get("freshness", {}).get("staleAfter")
    return isinstance(stale_after, str) and parse_iso(stale_after) <= now


def needs_attention(engine: MemoryEngine, *, offset: int = 0, limit: int = 200) -> FactPage:
    """Current facts a person should look at: agent facts that still need confirmation, and
    facts whose freshness has run out (stale_after passed)."""
    now = engine.now()
    options: dict[str, Any] = {
        "status": "current",
        "scope": None,
        "collection": None,
        "text": None,
        "now": now,
    }
    with Session(engine.db, expire_on_commit=False) as session:
        total = (
            session.scalar(
                _filtered(select(func.count()).select_from(tables.FactRow), **options).where(
                    _attention_clause(now)
                )
            )
            or 0
        )
        rows = session.scalars(
            _filtered(select(tables.FactRow), **options)
            .where(_attention_clause(now))
            .order_by(tables.FactRow.created_at.desc())
            .offset(offset)
            .limit(limit)
        ).all()
    return FactPage(list(rows), int(total))


def status_counts(engine: MemoryEngine, *, as_of: datetime | None = None) -> dict[str, int]:
    now = engine.now()
    with Session(engine.db) as session:
        return {
            status: int(
                session.scalar(
                    _filtered(
                        select(func.count()).select_from(tables.FactRow),
                        status=status,
                        scope=None,
                        collection=None,
                        text=None,
                        now=now,
                        as_of=as_of,
                    )
                )
                or 0
            )
            for status in STATUSES
        }


def known_scopes(engine: MemoryEngine) -> list[str]:
    with Session(engine.db) as session:
        return list(
            session.scalars(
                select(tables.FactScopeRow.scope).distinct().order_by(tables.FactScopeRow.scope)
            )
        )


def fact_row(engine: MemoryEngine, ref: str) -> tables.FactRow:
    with Session(engine.db, expire_on_commit=False) as session:
        row = get_fact(session, ref=ref)
    if row is None:
        raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {ref}.")
    return row


def chain(engine: MemoryEngine, ref: str) -> list[tables.FactRow]:
    """The supersession chain through `ref`, oldest first (predecessors, it, successors)."""
    with Session(engine.db, expire_on_commit=False) as session:
        row = get_fact(session, ref=ref)
        if row is None:
            raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {ref}.")
        older: list[tables.FactRow] = []
        cursor = row
        seen = {row.record_id}
        while cursor.supersedes:
            previous = get_fact(session, ref=cursor.supersedes[0])
            if previous is None or previous.record_id in seen:
                break
            older.insert(0, previous)
            seen.add(previous.record_id)
            cursor = previous
        newer: list[tables.FactRow] = []
        cursor = row
        while cursor.superseded_by and cursor.superseded_by not in seen:
            following = get_fact(session, ref=cursor.superseded_by)
            if following is None:
                break
            newer.append(following)
            seen.add(following.record_id)
            cursor = following
    return [*older, row, *newer]


def current_at(versions: Sequence[tables.FactRow], moment: datetime) -> tables.FactRow | None:
    """Which version of a chain was current at `moment` (record time)."""
    found = None
    for version in versions:
        if version.created_at is not None and version.created_at <= moment:
            found = version
    if found is not None and found.retired_at is not None and found.retired_at <= moment:
        return None
    return found


def effective_policy(engine: MemoryEngine, names: Sequence[str]) -> dict[str, Any]:
    """The egress lineage a recall over these collections would carry."""
    collections = engine.collections_by_name()
    sources = [
        {"collection": n, "policy": collections[n].policy, "source": collections[n].policy_source}
        for n in sorted(set(names))
        if n in collections
    ]
    if not sources:
        raise MemoryFailure("MEMORY_COLLECTION_NOT_FOUND", "Choose at least one collection.")
    strictest = min((s["policy"] for s in sources), key=lambda p: POLICY_STRICTNESS[p])
    return {"effectivePolicy": strictest, "digest": digest_of(sources), "sources": sources}


def duplicate_pairs(engine: MemoryEngine, *, scope: str, limit: int = 200) -> list[DuplicatePair]:
    """Near-duplicate pairs among the current facts of a scope, with the remember tiers.
    Pairs a person decided to keep both of (`duplicates.keep_both`) are left out."""
    kept = kept_pairs(engine)
    pairs = engine.retrieval().duplicate_pairs(Visibility([scope], None, engine.now()))
    return [p for p in pairs if frozenset((p.left.uri, p.right.uri)) not in kept][:limit]


def kept_pairs(engine: MemoryEngine) -> set[frozenset[str]]:
    """The uri pairs a person chose to keep both of (a verdict undone is withdrawn; a redo
    gives it again: engine/curation/undo_review.py)."""
    actions = (KEEP_BOTH, f"undo:{KEEP_BOTH}", f"redo:{KEEP_BOTH}")
    with Session(engine.db) as session:
        rows = session.scalars(
            select(tables.DecisionRow).where(tables.DecisionRow.action.in_(actions))
        ).all()
    undone = {row.detail.get("undoes") for row in rows if row.action.startswith("undo:")}
    return {
        frozenset(row.target.split("|", 1))
        for row in rows
        if not row.action.startswith("undo:") and row.id not in undone
    }
