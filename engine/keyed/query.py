"""recall of the keyed API, and the query parts it shares with search
(engine/keyed/service.py, docs/keyed-api.md).

recall walks the live keyed heads newest event first in SQL (keyset pagination on event
time, write time and record id); search (engine/keyed/search.py) ranks them with
engine.retrieval.lexical's BM25 over a per-namespace corpus kept by index generation. Both fill
a page while its compact JSON, cursor included, stays within `max_bytes`
(engine/keyed/cursor.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.contract.validation import ensure_valid
from engine.keyed import cursor as keyed_cursor
from engine.keyed.heads import COLLECTION, from_ms, hit_from_row, to_ms
from engine.keyed.requests import as_int, label, namespace_scope, validate_request
from engine.storage.queries import keyed as keyed_queries
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

MAX_QUERY_BYTES = 16 * 1024
MAX_QUERY_TERMS = 64
MAX_LIMIT = 100
MAX_RESPONSE_BYTES = 1024 * 1024
# Work bounds of one recall page; a page that reaches one ends with a cursor to go on.
MAX_SCAN_ROWS = 10_000
MAX_SCAN_BYTES = 16 * 1024 * 1024


# -- shared query parts -----------------------------------------------------------------------


@dataclass
class Filters:
    namespace: str
    tag: str | None
    topic: str | None
    since_ms: int | None
    until_ms: int | None
    limit: int
    max_bytes: int

    def binding(self) -> dict[str, Any]:
        return {
            "ns": self.namespace,
            "tag": self.tag,
            "topic": self.topic,
            "since": self.since_ms,
            "until": self.until_ms,
        }

    def admits(self, topic: str | None, tags: tuple[str, ...], occurred: int) -> bool:
        return (
            (self.topic is None or topic == self.topic)
            and (self.tag is None or self.tag in tags)
            and (self.since_ms is None or occurred >= self.since_ms)
            and (self.until_ms is None or occurred <= self.until_ms)
        )


def parse_filters(request: dict[str, Any], namespace: str | None) -> Filters:
    name, _ = namespace_scope(namespace)
    since, until = as_int(request.get("since_ms")), as_int(request.get("until_ms"))
    if since is not None and until is not None and since > until:
        raise MemoryFailure(
            "MEMORY_RANGE_INVALID",
            f"since_ms ({since}) is after until_ms ({until}); the range is inclusive on event "
            "time: pass since_ms <= until_ms.",
        )
    limit = as_int(request.get("limit", 20))
    assert limit is not None
    if not 1 <= limit <= MAX_LIMIT:
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID", f"limit is {limit}; ask for 1 to {MAX_LIMIT} items a page."
        )
    max_bytes = as_int(request.get("max_bytes", 16384))
    assert max_bytes is not None
    if max_bytes > MAX_RESPONSE_BYTES:
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"max_bytes is {max_bytes}; the largest page is {MAX_RESPONSE_BYTES} bytes. Page "
            "with next_cursor for more.",
        )
    return Filters(
        namespace=name,
        tag=label(request["tag"], "tag") if request.get("tag") is not None else None,
        topic=label(request["topic"], "topic") if request.get("topic") is not None else None,
        since_ms=since,
        until_ms=until,
        limit=limit,
        max_bytes=max_bytes,
    )


def check_query_size(query: str) -> None:
    size = len(query.encode("utf-8"))
    if size > MAX_QUERY_BYTES:
        raise MemoryFailure(
            "MEMORY_QUERY_TOO_LARGE",
            f"The query is {size} bytes of UTF-8; the limit is {MAX_QUERY_BYTES} (16 KiB). "
            "Shorten it to the words that matter.",
        )


def cursor_secret(engine: MemoryEngine) -> bytes:
    """The store's cursor key: the home's in the embedded mode; the database's in the server
    mode, so that a cursor cut by one home verifies on every other home of that database."""
    return engine.store.cursor_secret(engine)


def bad_position() -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_CURSOR_INVALID",
        "The cursor's position is malformed; drop it to start from the first page.",
    )


# -- recall -----------------------------------------------------------------------------------


def recall(engine: MemoryEngine, request: Any, *, namespace: str | None = None) -> dict[str, Any]:
    """MemoryQuery -> `{items, next_cursor, scanned, scanned_bytes}`, newest event first
    (then newest write, then record id); every whitespace-separated query term must occur in
    the content, case-insensitively. Pages are not a snapshot: a cursor continues after its
    position (keyset on event time, write time, record id) whatever was written since."""
    validate_request("recall", request)
    query = request.get("query") or ""
    check_query_size(query)
    terms = sorted({term.casefold() for term in query.split()})
    if len(terms) > MAX_QUERY_TERMS:
        raise MemoryFailure(
            "MEMORY_QUERY_TOO_LARGE",
            f"The query has {len(terms)} distinct terms and every one must occur; at most "
            f"{MAX_QUERY_TERMS} are allowed. Use search for ranked, any-term retrieval.",
        )
    filters = parse_filters(request, namespace)
    binding = keyed_cursor.fingerprint({"kind": "recall", "terms": terms, **filters.binding()})
    secret = cursor_secret(engine)
    after: tuple[int, int, str] | None = None
    if request.get("cursor") is not None:
        payload = keyed_cursor.decode(secret, request["cursor"], kind="recall", bound_to=binding)
        position = payload.get("p")
        if not (
            isinstance(position, list)
            and len(position) == 3
            and isinstance(position[0], int)
            and isinstance(position[1], int)
            and isinstance(position[2], str)
        ):
            raise bad_position()
        after = (position[0], position[1], position[2])

    def cursor(at: tuple[int, int, str]) -> str:
        return keyed_cursor.encode(secret, {"k": "recall", "f": binding, "p": list(at)})

    budget = keyed_cursor.PageBudget(filters.max_bytes)
    scanned = scanned_bytes = 0
    last, more = after, False
    fitted: tuple[int, int, tuple[int, int, str]] | None = None
    with engine.session(expire_on_commit=False) as db:
        page = partial(
            keyed_queries.current_keyed_heads_page,
            db,
            collection=COLLECTION,
            namespace=filters.namespace,
            topic=filters.topic,
            tag=filters.tag,
            since_ms=filters.since_ms,
            until_ms=filters.until_ms,
            now=engine.now(),
        )
        for row in _scan(page, after):
            if len(budget.items) == filters.limit:
                more = True
                break
            size = len(row.text.encode("utf-8"))
            if scanned >= MAX_SCAN_ROWS or (scanned and scanned_bytes + size > MAX_SCAN_BYTES):
                more = True
                break
            scanned += 1
            scanned_bytes += size
            assert row.created_at is not None and row.kv_occurred_at_ms is not None
            at = (row.kv_occurred_at_ms, to_ms(row.created_at), row.record_id)
            folded = row.text.casefold()
            if not all(term in folded for term in terms):
                last = at
                continue
            item = hit_from_row(row)
            tail = {"next_cursor": cursor(at), "scanned": scanned, "scanned_bytes": scanned_bytes}
            if not budget.try_add(item, tail):
                if not budget.items:
                    needed = budget.size(tail, keyed_cursor.size_of(item))
                    raise budget.too_large(needed, "a page with the first matching memory")
                more = True  # this row opens the next page
                break
            last, fitted = at, (scanned, scanned_bytes, at)
    final = {
        "next_cursor": cursor(last) if more and last is not None else None,
        "scanned": scanned,
        "scanned_bytes": scanned_bytes,
    }
    if budget.size(final) > filters.max_bytes:
        if fitted is None:
            raise budget.too_large(budget.size(final), "an empty page")
        # Rows scanned after the last item lengthened the page: stop right after that item.
        final = {"next_cursor": cursor(fitted[2]), "scanned": fitted[0], "scanned_bytes": fitted[1]}
    return ensure_valid("keyed_recall", budget.page(final))


# One page of rows after a keyset position (event time in ms, write time, record id).
Page = Callable[[tuple[int, datetime, str] | None, int], list[tables.FactRow]]


def _scan(
    page: Page,
    after: tuple[int, int, str] | None,
    batch: int = 256,
) -> Iterator[tables.FactRow]:
    """Live keyed heads passing the SQL-side filters, newest event first, in batches."""
    position = after
    while True:
        keyset: tuple[int, datetime, str] | None = None
        if position is not None:
            occurred, written_ms, record_id = position
            keyset = (occurred, from_ms(written_ms), record_id)
        rows = page(keyset, batch)
        yield from rows
        if len(rows) < batch:
            return
        last = rows[-1]
        assert last.created_at is not None and last.kv_occurred_at_ms is not None
        position = (last.kv_occurred_at_ms, to_ms(last.created_at), last.record_id)
