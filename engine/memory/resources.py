"""Facts and the review queue as readable resources (what the MCP server serves by uri): a
fact's file as Markdown, or its public shape as JSON; the pending proposals as JSON.

What a resource shows is what a recall would (docs/mcp.md, Resources): a fact is served only
while it is current (not superseded, retired or expired) and, on a server bound to some
scopes, only if it shares one of them; the proposals list keeps the proposals sharing an
allowed scope, and of their candidates only those visible in the same way. `scopes=None`
means every scope (a server started without --allow-scope). A uri is matched exactly, and a
fact's file is read only if its resolved path lies inside its collection's resolved root, so
a symlink cannot make the server read a file elsewhere."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.storage.proposals import list_proposals
from engine.storage.queries.memory import facts_by_ids_or_uris
from engine.storage.reads.records import get_fact, public_fact
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

PROPOSALS_URI = "gno://review/proposals"
FACT_TEMPLATE = "gno://{collection}/facts/{day}/{file}"
# Anchored with \Z, not $ (which also matches before a trailing newline): a uri matches exactly.
FACT_URI = re.compile(
    r"^gno://(?P<collection>[a-z0-9][a-z0-9_-]{0,63})/facts/(?P<day>\d{4}-\d{2}-\d{2})/"
    r"(?P<record>mem-[0-9a-f]{16})\.(?P<ext>md|json)\Z"
)


def _shares(scopes: Collection[str] | None, fact_scopes: Collection[str]) -> bool:
    return scopes is None or bool(set(scopes) & set(fact_scopes))


def read_resource(
    engine: MemoryEngine,
    uri: str,
    *,
    scopes: Collection[str] | None = None,
    collections: Collection[str] | None = None,
) -> tuple[str, str]:
    """The text and MIME type of a resource, as seen from `scopes` (None: every scope) and
    in `collections` (None: every one; a token's egress ceiling admits fewer)."""
    if uri == PROPOSALS_URI:
        document = {"proposals": visible_proposals(engine, scopes=scopes, collections=collections)}
        return json.dumps(document, ensure_ascii=False), "application/json"
    match = FACT_URI.fullmatch(uri)
    if match is None:
        raise MemoryFailure(
            "MEMORY_NOT_FOUND",
            "That is not a resource of this server: read "
            f"{PROPOSALS_URI} or a fact uri "
            "gno://<collection>/facts/<YYYY-MM-DD>/mem-<16 hex>.md (or .json), exactly as a "
            "recall reported it.",
        )
    collection, day, record = match["collection"], match["day"], match["record"]
    md_uri = f"gno://{collection}/facts/{day}/{record}.md"
    missing = MemoryFailure(
        "MEMORY_NOT_FOUND", f"No fact {md_uri} is readable here. Recall to find the current uri."
    )
    with engine.session(expire_on_commit=False) as session:
        row = get_fact(session, ref=md_uri)
    if collection not in engine.collections_by_name() or (
        collections is not None and collection not in collections
    ):
        raise missing
    # A fact not indexed (its write's index half failed) is served where its file stands.
    served = engine.store.served_fact(engine, collection, md_uri, f"facts/{day}/{record}.md", row)
    if served is None:
        raise missing
    found, markdown = served
    return _served(engine, found, match["ext"], scopes, markdown)


def _served(
    engine: MemoryEngine,
    row: tables.FactRow,
    ext: str,
    scopes: Collection[str] | None,
    markdown: Callable[[], str],
) -> tuple[str, str]:
    """A fact resource, once its row is known: visible from `scopes`, current, as asked."""
    if not _shares(scopes, row.scopes):
        raise MemoryFailure(  # the same answer as an unknown uri: nothing says it exists
            "MEMORY_NOT_FOUND",
            f"No fact {row.uri} is readable here. Recall to find the current uri.",
        )
    if not row.is_current(engine.now()):
        raise MemoryFailure(
            "MEMORY_NOT_FOUND",
            f"{row.uri} is not current ({_state(row, engine.now())}); like recall, this "
            "server serves only current facts. Recall again to find what holds now.",
        )
    if ext == "md":
        return markdown(), "text/markdown"
    return json.dumps(public_fact(row), ensure_ascii=False), "application/json"


def _state(row: tables.FactRow, now: datetime) -> str:
    if row.superseded_by is not None:
        return "superseded"
    if row.retired_at is not None:
        return "retired"
    return "expired" if visibility.is_expired(row.expires_at, now) else "current"


def visible_proposals(
    engine: MemoryEngine,
    *,
    scopes: Collection[str] | None = None,
    collections: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """The pending proposals sharing one of `scopes` (None: all) in `collections` (None:
    all), each keeping only the candidates a recall in `scopes` would see now (current,
    sharing a scope, in `collections`); a predecessor that is not so visible keeps its uri but
    not its contentHash (a short text's hash can be guessed)."""
    proposals = [
        p
        for p in list_proposals(engine)
        if _shares(scopes, p["scopes"]) and (collections is None or p["collection"] in collections)
    ]
    ids = {c.get("recordId") for p in proposals for c in p["candidates"]}
    ids |= {p["predecessor"] for p in proposals if p.get("predecessor")}
    ids.discard(None)
    now = engine.now()
    visible: set[str] = set()
    if ids:
        with engine.session(expire_on_commit=False) as session:
            rows = facts_by_ids_or_uris(session, ids)
        for row in rows:
            admitted = collections is None or row.collection in collections
            if row.is_current(now) and _shares(scopes, row.scopes) and admitted:
                visible |= {row.record_id, row.uri}
    for proposal in proposals:
        proposal["candidates"] = [c for c in proposal["candidates"] if c.get("recordId") in visible]
        if proposal.get("predecessor") and proposal["predecessor"] not in visible:
            proposal["predecessorHash"] = None
    return proposals
