"""Read-only views for curation surfaces (the workbench, `gno-tui review --list`, exports):
pages of facts with their state, a fact's chain, receipts with usage, near-duplicate pairs,
fence previews and effective egress policy. Nothing here writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import POLICY_STRICTNESS, digest_of
from engine.retrieval.seam import DuplicatePair, Visibility
from engine.storage.queries import memory as queries
from engine.storage.queries.memory import Exclusions as Exclusions  # the Library's `!` terms
from engine.storage.queries.memory import FactFilter
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
    where = FactFilter(
        now=now,
        status=status,
        scope=scope,
        collection=collection,
        text=text,
        invert=invert,
        as_of=as_of,
        exclude=exclude,
    )
    with engine.session(expire_on_commit=False) as session:
        if text and not invert and (every_id or within is not None):
            # A text filter reads every text anyway: one pass gives the matches' ids in
            # order, hence the total and the page, instead of a page's pass and a count's
            # (two scans of 100k texts: 58 ms for a word in 400 facts). It costs more when
            # many facts match (65 ms against 34 for one letter, in 28k facts: the page's
            # pass stops at its 200th match), so the Library asks for it only once a filter
            # is known to match few.
            ids = queries.matching_fact_ids(session, where, within)
            wanted = ids[offset : offset + limit]
            found = {row.record_id: row for row in queries.facts_by_ids_in_chunks(session, wanted)}
            rows = [found[record_id] for record_id in wanted if record_id in found]
            return FactPage(rows, len(ids), tuple(ids))
        rows = queries.fact_page(session, where, offset=offset, limit=limit)
        if len(rows) < limit and (rows or offset == 0):
            # A short page is the last one: the total is known without a second pass over
            # the table (a filter by a rare word scanned 100k texts twice for it).
            total = offset + len(rows)
        else:
            total = queries.count_facts(session, where)
    return FactPage(list(rows), int(total))


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

    now = engine.now()
    recent = FactFilter(
        now=now, status=status, scope=scope, collection=collection, as_of=as_of, exclude=exclude
    )
    with engine.session(expire_on_commit=False) as session:
        window = queries.recent_fact_texts(session, recent, FUZZY_WINDOW)
        found = process.extract(
            text.lower(),
            [row_text.lower() for _, row_text in window],
            scorer=fuzz.partial_ratio,
            score_cutoff=75,
            limit=limit,
        )
        ids = [window[index][0] for _, _, index in found]
        rows = {row.record_id: row for row in queries.facts_by_ids(session, ids)}
    kept = [rows[record_id] for record_id in ids if record_id in rows]  # (gone meanwhile)
    return FactPage(kept, len(kept))


def is_stale(row: tables.FactRow, now: datetime) -> bool:
    """Its freshness ran out (`stale_after` passed): shown as stale until confirmed again."""
    from engine.contract.normalize import parse_iso

    stale_after = row.workbench.get("freshness", {}).get("staleAfter")
    return isinstance(stale_after, str) and parse_iso(stale_after) <= now


def needs_attention(engine: MemoryEngine, *, offset: int = 0, limit: int = 200) -> FactPage:
    """Current facts a person should look at: agent facts that still need confirmation, and
    facts whose freshness has run out (stale_after passed)."""
    where = FactFilter(now=engine.now(), status="current")
    with engine.session(expire_on_commit=False) as session:
        total = queries.count_needing_attention(session, where)
        rows = queries.facts_needing_attention(session, where, offset=offset, limit=limit)
    return FactPage(list(rows), int(total))


def status_counts(engine: MemoryEngine, *, as_of: datetime | None = None) -> dict[str, int]:
    now = engine.now()
    with engine.session() as session:
        return {
            status: queries.count_facts(session, FactFilter(now=now, status=status, as_of=as_of))
            for status in STATUSES
        }


def known_scopes(engine: MemoryEngine) -> list[str]:
    with engine.session() as session:
        return queries.distinct_scopes(session)


def fact_row(engine: MemoryEngine, ref: str) -> tables.FactRow:
    with engine.session(expire_on_commit=False) as session:
        row = get_fact(session, ref=ref)
    if row is None:
        raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {ref}.")
    return row


def chain(engine: MemoryEngine, ref: str) -> list[tables.FactRow]:
    """The supersession chain through `ref`, oldest first (predecessors, it, successors)."""
    with engine.session(expire_on_commit=False) as session:
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
    with engine.session() as session:
        rows = queries.decisions_with_actions(session, actions)
    undone = {row.detail.get("undoes") for row in rows if row.action.startswith("undo:")}
    return {
        frozenset(row.target.split("|", 1))
        for row in rows
        if not row.action.startswith("undo:") and row.id not in undone
    }
