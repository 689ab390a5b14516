"""What the Library shows of a fact (its row in the table, every field in the detail pane),
how its filter box reads, and how a page of it is loaded."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.text import Text
from textual.message import Message

from engine.contract.normalize import collapse_text, iso_utc, parse_iso
from engine.memory import browse

# The table's columns and fixed widths (fact_cells fills them).
COLUMNS = (
    ("summary", 36),
    ("scopes", 18),
    ("collection", 10),
    ("status", 10),
    ("provenance", 20),
    ("use policy", 13),
    ("conf.", 5),
    ("created", 16),
    ("caller", 16),
)
# The status tabs: (key, label); "attention" is agent facts awaiting confirmation + stale.
TABS = (
    ("all", "All"),
    ("current", "Current"),
    ("attention", "Needs attention"),
    ("superseded", "Superseded"),
    ("retired", "Retired"),
    ("expired", "Expired"),
)


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


@dataclass
class FactsLoaded(Message):
    rows: list[Any]
    total: int
    offset: int
    counts: dict[str, int]


def load_library_page(
    store: Any, wanted: LibraryFilter, tab: str, offset: int, limit: int
) -> FactsLoaded:
    """One page for the Library's filter and tab, with the tabs' counts (blocking: call it
    from a worker). As of a past time the attention tab shows the facts current then."""
    if wanted.as_of is not None and tab == "attention":
        tab = "current"
    status = wanted.status or (tab if tab in browse.STATUSES else None)
    if tab == "attention":
        page = browse.needs_attention(store, offset=offset, limit=limit)
    elif wanted.text and not wanted.invert and offset == 0:
        page = browse.search_facts(
            store,
            text=wanted.text,
            status=status,
            scope=wanted.scope,
            collection=wanted.collection,
            limit=limit,
            as_of=wanted.as_of,
        )
    else:
        page = browse.list_facts(
            store,
            status=status,
            scope=wanted.scope,
            collection=wanted.collection,
            text=wanted.text or None,
            invert=wanted.invert,
            offset=offset,
            limit=limit,
            as_of=wanted.as_of,
        )
    counts = browse.status_counts(store, as_of=wanted.as_of)
    counts["attention"] = (
        counts["current"]
        if wanted.as_of is not None
        else browse.needs_attention(store, limit=1).total
    )
    return FactsLoaded(page.rows, page.total, offset, counts)


def fact_cells(
    row: Any, now: Any, marked: bool = False, as_of: datetime | None = None
) -> list[Text]:
    """The row's cells; a marked fact's summary starts with ●. As of a past time the status
    is the one it had then."""
    status = browse.status_of(row, now) if as_of is None else browse.status_at(row, as_of)
    if status == "current" and browse.is_stale(row, as_of or now):
        status = "stale"
    style = "" if status == "current" else "dim"
    provenance = row.workbench.get("provenance", {})
    policy = row.workbench.get("usePolicy", {})
    use = ("instr" if policy.get("canUseAsInstruction") else "evid") + (
        "·confirm?" if policy.get("requiresUserConfirmation") else ""
    )
    cells = [
        # Short cells so that every column fits beside the detail pane; the pane has it all.
        ("● " if marked else "") + collapse_text(row.text)[: 34 if marked else 36],
        ",".join(row.scopes)[:18],
        row.collection,
        status,
        f"{provenance.get('status', '?')}/{provenance.get('createdBy', '?')}",
        use,
        f"{float(provenance.get('confidence', 0)):.2f}",
        iso_utc(row.created_at)[:16].replace("T", " "),
        row.caller,
    ]
    return [Text(str(cell), style=style) for cell in cells]


def detail_text(row: Any, now: Any, path: str, recalled: int, last_by: str | None) -> Text:
    status = browse.status_of(row, now)
    lines = Text()
    lines.append(f"{row.docid}  {status}\n", style="bold")
    lines.append(f"{row.text}\n\n")
    fields = [
        ("uri", row.uri),
        ("scopes", ", ".join(row.scopes)),
        ("collection", row.collection),
        ("caller", row.caller),
        ("session", row.session),
        ("created", iso_utc(row.created_at)),
        ("contentHash", row.content_hash),
        ("source", row.source or "—"),
        ("file", path),
        ("supersedes", ", ".join(row.supersedes) or "—"),
        ("superseded by", row.superseded_by or "—"),
    ]
    if row.retired_at:
        fields.append(
            ("retired", f"{iso_utc(row.retired_at)} by {row.retired_by}: {row.retired_reason}")
        )
    keyed = row.workbench.get("keyed")
    if isinstance(keyed, dict) and keyed.get("key"):
        fields += [
            ("key", f"{keyed['key']} (namespace {keyed.get('namespace', 'default')})"),
            ("revision", str(keyed.get("revision", 1))),
            ("topic", str(keyed.get("topic") or "—")),
            ("tags", ", ".join(keyed.get("tags") or []) or "—"),
        ]
    if row.expires_at:
        fields.append(("expires", iso_utc(row.expires_at)))
    for key in ("provenance", "usePolicy", "freshness"):
        for name, value in row.workbench.get(key, {}).items():
            fields.append((f"{key}.{name}", str(value)))
    fields.append(("recalled", f"{recalled}×" + (f", last by {last_by}" if last_by else "")))
    for name, value in fields:
        lines.append(f"{name:>16} ", style="bold cyan")
        lines.append(f"{value}\n")
    return lines
