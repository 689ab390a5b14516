"""The Library's view of the store: its filter grammar and one page of facts for a filter and
a status tab, with every tab's count."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.contract.normalize import parse_iso
from engine.memory import browse
from engine.memory.as_of_fields import rows_as_of
from engine.storage.queries.memory import tab_tallies, word_matches_narrow
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


@dataclass
class LibraryFilter:
    """Parsed from the filter box: `s:scope c:collection st:status` prefixes, `@time` for
    as-of, the rest is free text. `!` before any term, wherever it stands, negates that term
    alone: `c:team !backups` is the team collection's facts that do not say "backups"."""

    text: str = ""
    scope: str | None = None
    collection: str | None = None
    status: str | None = None
    exclude: browse.Exclusions = field(default_factory=browse.Exclusions)
    as_of: datetime | None = None  # `@time`: the store as it was then
    problem: str | None = None  # a part of the filter that could not be read, and why

    @classmethod
    def parse(cls, raw: str) -> LibraryFilter:
        parsed = cls()
        words: list[str] = []
        left_out: dict[str, list[str]] = {"s": [], "c": [], "st": [], "": []}
        for word in raw.split():
            negated = word.startswith("!")
            term = word[1:] if negated else word
            if not term:
                continue  # a lone `!` (being typed) negates nothing yet
            key, _, value = term.partition(":")
            prefixed = bool(value) and key in ("s", "c", "st")
            if negated and term.startswith("@"):
                parsed.problem = f"{word}: a time cannot be negated; write @2026-11-01."
            elif negated:
                left_out[key if prefixed else ""].append(value.lower() if prefixed else term)
            elif prefixed and key == "s":
                parsed.scope = value.lower()
            elif prefixed and key == "c":
                parsed.collection = value.lower()
            elif prefixed and key == "st":
                parsed.status = value.lower()
            elif term.startswith("@") and len(term) > 1:
                try:
                    parsed.as_of = parse_iso(term[1:])
                except ValueError:
                    parsed.problem = (
                        f"{word} is not a time: write @2026-11-01 or @2026-11-01T09:00Z."
                    )
            else:
                words.append(term)
        parsed.text = " ".join(words)
        parsed.exclude = browse.Exclusions(
            words=tuple(left_out[""]),
            scopes=tuple(left_out["s"]),
            collections=tuple(left_out["c"]),
            statuses=tuple(left_out["st"]),
        )
        return parsed


@dataclass(frozen=True)
class LibraryPage:
    rows: list[tables.FactRow]
    total: int
    offset: int
    counts: dict[str, int]  # tab key -> facts under it


def library_page(
    engine: MemoryEngine, wanted: LibraryFilter, tab: str, offset: int, limit: int
) -> LibraryPage:
    """One page for the Library's filter and tab, with the tabs' counts (blocking: call it
    from a worker). As of a past time the attention tab shows the facts current then."""
    if wanted.as_of is not None and tab == "attention":
        tab = "current"
    status = wanted.status or (tab if tab in browse.STATUSES else None)
    if tab == "attention":
        page = browse.needs_attention(engine, offset=offset, limit=limit)
    elif wanted.text and offset == 0:
        generation = engine.generation()  # read first: a write during the search moves it
        searched_at = engine.now()
        narrowed = _Searched.narrowed(engine, generation, searched_at, wanted, status)
        page = browse.search_facts(
            engine,
            text=wanted.text,
            status=status,
            scope=wanted.scope,
            collection=wanted.collection,
            limit=limit,
            as_of=wanted.as_of,
            exclude=wanted.exclude,
            within=narrowed.matched if narrowed is not None else None,
            every_id=narrowed is not None and narrowed.total <= NARROW_WITHIN,
        )
        _LAST_SEARCHED[engine] = _Searched(generation, searched_at, _rest_of(wanted, status),
                                           wanted.text, page.total, page.matched)  # fmt: skip
    else:
        page = browse.list_facts(
            engine,
            status=status,
            scope=wanted.scope,
            collection=wanted.collection,
            text=wanted.text or None,
            offset=offset,
            limit=limit,
            as_of=wanted.as_of,
            exclude=wanted.exclude,
        )
    rows = page.rows if wanted.as_of is None else rows_as_of(engine, page.rows, wanted.as_of)
    return LibraryPage(rows, page.total, offset, tab_counts(engine, wanted.as_of))


@dataclass(frozen=True)
class _Searched:
    """The last text filter, as of one store generation: how many facts it matched and, when
    they were few, their ids. Typing the next letter of a word can only narrow them, so that
    filter is searched among these ids instead of in every text (a few hundred lookups for a
    rare word instead of a scan of 100k: 58 -> 8 ms); once a filter is known to match few,
    the next one is searched in one pass that gives its ids (browse.list_facts)."""

    generation: int
    searched_at: datetime  # the clock then: set back, it may bring an expired fact back
    rest: tuple[Any, ...]  # the filter but its text (status, scope, collection, as of, `!`s)
    text: str
    total: int
    matched: tuple[str, ...] | None

    @staticmethod
    def narrowed(
        engine: MemoryEngine,
        generation: int,
        now: datetime,
        wanted: LibraryFilter,
        status: str | None,
    ) -> _Searched | None:
        """The last search if `wanted` can only match among its matches, else None."""
        last = _LAST_SEARCHED.get(engine)
        if (
            last is None
            or last.generation != generation
            or last.rest != _rest_of(wanted, status)
            or now < last.searched_at
        ):
            return None
        if wanted.as_of is None and (status == "expired" or "current" in wanted.exclude.statuses):
            return None  # facts join these as the clock passes their expiry, with no write
        # A fact holding every new word holds every old word that is part of a new one.
        new_words = [_ascii_lower(word) for word in wanted.text.split()]
        for old in last.text.split():
            if not any(_ascii_lower(old) in new for new in new_words):
                return None
        # Where the database's word match does not narrow (PostgreSQL's ILIKE), a filter gets
        # the one pass, never a search among the last matches.
        too_many = last.matched is not None and len(last.matched) > NARROW_WITHIN
        if too_many or not word_matches_narrow(engine.db):
            return replace(last, matched=None)
        return last


# Narrow within the last matches only when they are this few (each id is a lookup; more
# would cost what the scan does).
NARROW_WITHIN = 5_000
_LAST_SEARCHED: weakref.WeakKeyDictionary[MemoryEngine, _Searched] = weakref.WeakKeyDictionary()
# SQLite's LIKE ignores the case of ASCII letters only, so only those are folded here: a
# word that contains another but for the case of a non-ASCII letter does not narrow it.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(word: str) -> str:
    return word.translate(_ASCII_LOWER)


def _rest_of(wanted: LibraryFilter, status: str | None) -> tuple[Any, ...]:
    return (status, wanted.scope, wanted.collection, wanted.as_of, wanted.exclude)


@dataclass(frozen=True)
class _Counted:
    """The tabs' counts as of one store generation, and until when the clock cannot change
    them (the next expiry or staleness after they were counted; None: never)."""

    generation: int
    as_of: datetime | None
    counted_at: datetime
    valid_until: datetime | None
    counts: dict[str, int]

    def holds(self, generation: int, as_of: datetime | None, now: datetime) -> bool:
        return (
            generation == self.generation
            and as_of == self.as_of
            and self.counted_at <= now
            and (self.valid_until is None or now < self.valid_until)
        )


# Per engine: the counts last given. The tabs count the whole store, whatever the filter, so
# each keystroke in the filter asked the same counts again: 0.27 s of CPU at 100k facts (the
# needs-attention count reads JSON fields of every row).
_LAST_COUNTED: weakref.WeakKeyDictionary[MemoryEngine, _Counted] = weakref.WeakKeyDictionary()


def tab_counts(engine: MemoryEngine, as_of: datetime | None = None) -> dict[str, int]:
    """Every status tab's count and needs attention's (as of a past time: the facts current
    then), exactly as counting now would give: counted again when the store's generation
    moved (every write moves it, in any process) or the clock passed a fact's expiry or
    staleness since the last count."""
    generation = engine.generation()  # read first: a write during the count moves it past
    now = engine.now()
    last = _LAST_COUNTED.get(engine)
    if last is not None and last.holds(generation, as_of, now):
        return dict(last.counts)
    counts, valid_until = count_tabs(engine, now, as_of)
    _LAST_COUNTED[engine] = _Counted(generation, as_of, now, valid_until, counts)
    return dict(counts)


def count_tabs(
    engine: MemoryEngine, now: datetime, as_of: datetime | None
) -> tuple[dict[str, int], datetime | None]:
    """The counts in one pass over the facts (each count is that tab's own clause, as
    `browse.list_facts` filters by it), and the first moment after `now` at which a fact
    expires or turns stale, when the counts would change with no write (None as of a past
    time: those counts never change)."""
    with engine.session() as session:
        found = tab_tallies(session, browse.STATUSES, now, as_of)
    counts = {status: int(found[i] or 0) for i, status in enumerate(browse.STATUSES)}
    if as_of is not None:
        counts["attention"] = counts["current"]
        return counts, None
    counts["attention"] = int(found[4] or 0)
    moments = [found[5], parse_iso(found[6]) if found[6] else None]
    return counts, min((m for m in moments if m is not None), default=None)
