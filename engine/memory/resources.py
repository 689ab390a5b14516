"""Facts and the review queue as readable resources (what the MCP server serves by uri): a
fact's file as Markdown, or its public shape as JSON; the pending proposals as JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.storage.factfiles import parse_fact_file
from engine.storage.proposals import list_proposals
from engine.storage.records import get_fact, public_fact, row_from_file

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

PROPOSALS_URI = "gno://review/proposals"
FACT_TEMPLATE = "gno://{collection}/facts/{day}/{file}"
FACT_URI = re.compile(
    r"^gno://(?P<collection>[a-z0-9][a-z0-9_-]{0,63})/facts/(?P<day>\d{4}-\d{2}-\d{2})/"
    r"(?P<record>mem-[0-9a-f]{16})\.(?P<ext>md|json)$"
)


def read_resource(engine: MemoryEngine, uri: str) -> tuple[str, str]:
    """The text and MIME type of a resource."""
    if uri == PROPOSALS_URI:
        return json.dumps(
            {"proposals": list_proposals(engine)}, ensure_ascii=False
        ), "application/json"
    match = FACT_URI.match(uri)
    if match is None:
        raise MemoryFailure(
            "MEMORY_NOT_FOUND",
            f"{uri} is not a resource of this server: read {PROPOSALS_URI} or a fact uri "
            "gno://<collection>/facts/<YYYY-MM-DD>/mem-<16 hex>.md (or .json).",
        )
    collection, day, record = match["collection"], match["day"], match["record"]
    md_uri = f"gno://{collection}/facts/{day}/{record}.md"
    with Session(engine.db, expire_on_commit=False) as session:
        row = get_fact(session, ref=md_uri)
    root = engine.collection_root(collection)
    path = Path(root) / (row.rel_path if row else f"facts/{day}/{record}.md")
    if not path.is_file():
        raise MemoryFailure(
            "MEMORY_NOT_FOUND", f"No fact {md_uri}. Recall to find the current uri."
        )
    content = path.read_text(encoding="utf-8")
    if match["ext"] == "md":
        return content, "text/markdown"
    if row is None:  # written but not indexed (sync failed): the file is canonical
        fact = parse_fact_file(content, where=str(path))
        row = row_from_file(
            fact,
            collection=collection,
            uri=md_uri,
            rel_path=f"facts/{day}/{record}.md",
            docid=str(fact.workbench.get("docid") or "#" + record[4:12]),
        )
    return json.dumps(public_fact(row), ensure_ascii=False), "application/json"
