"""The Library's view of the store: its filter grammar and one page of facts for a filter and
a status tab, with every tab's count."""

from __future__ import annotations

from dataclasses import dataclass
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
    as-of, `!` to invert, the rest is free text."""

    text: str = ""
    scope: str | None = None
    collection: str | None = None
    status: str | None = None
    invert: bool = False
    as_of: datetime | None = None  # `@time`: the store as it was then
    problem: str | None = None  # a part of the filter that could not be read, and why

    @classmethod
    def parse(cls, raw: str) -> LibraryFilter:
        parsed = cls()
        words = []
        raw = raw.strip()
        if raw.startswith("!"):
            parsed.invert, raw = True, raw[1:]
        for word in raw.split():
            key, _, value = word.partition(":")
            if value and key == "s":
                parsed.scope = value.lower()
            elif value and key == "c":
                parsed.collection = value.lower()
            elif value and key == "st":
                parsed.status = value.lower()
            elif word.startswith("@") and len(word) > 1:
                try:
                    parsed.as_of = parse_iso(word[1:])
                except ValueError:
                    parsed.problem = (
                        f"{word} is not a time: write @2026-11-01 or @2026-11-01T09:00Z."
                    )
            else:
                words.append(word)
        parsed.text = " ".join(words)
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
    elif wanted.text and not wanted.invert and offset == 0:
        page = browse.search_facts(
            engine,
            text=wanted.text,
            status=status,
            scope=wanted.scope,
            collection=wanted.collection,
            limit=limit,
            as_of=wanted.as_of,
        )
    else:
        page = browse.list_facts(
            engine,
            status=status,
            scope=wanted.scope,
            collection=wanted.collection,
            text=wanted.text or None,
            invert=wanted.invert,
            offset=offset,
            limit=limit,
            as_of=wanted.as_of,
        )
    counts = browse.status_counts(engine, as_of=wanted.as_of)
    counts["attention"] = (
        counts["current"]
        if wanted.as_of is not None
        else browse.needs_attention(engine, limit=1).total
    )
    return LibraryPage(page.rows, page.total, offset, counts)
