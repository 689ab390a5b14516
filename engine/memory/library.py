"""The Library's view of the store: its filter grammar and one page of facts for a filter and
a status tab, with every tab's count."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from engine.contract.normalize import parse_iso
from engine.memory import browse
from engine.storage import tables

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
        page = browse.search_facts(
            engine,
            text=wanted.text,
            status=status,
            scope=wanted.scope,
            collection=wanted.collection,
            limit=limit,
            as_of=wanted.as_of,
            exclude=wanted.exclude,
        )
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
    counts = browse.status_counts(engine, as_of=wanted.as_of)
    counts["attention"] = (
        counts["current"]
        if wanted.as_of is not None
        else browse.needs_attention(engine, limit=1).total
    )
    return LibraryPage(page.rows, page.total, offset, counts)
