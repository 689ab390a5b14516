"""The keyed memory API (seed 003) as MCP tools: memory_remember, memory_recall, memory_search.

Their input schemas are the seed's requests unchanged; the engine validates every request
against them before anything runs. Keyed writes apply directly even on a propose-only server:
a key's revisions are compare-and-swap updates an agent retries on, which cannot wait for a
person (the facts still show in the workbench for curation)."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types

from engine.contract.validation import load_schema
from engine.keyed import service as keyed
from engine.storage.store import MemoryEngine

MEMORY_REMEMBER = "memory_remember"
MEMORY_RECALL = "memory_recall"
MEMORY_SEARCH = "memory_search"
KEYED_TOOLS = (MEMORY_REMEMBER, MEMORY_RECALL, MEMORY_SEARCH)

_DESCRIPTIONS = {
    MEMORY_REMEMBER: (
        "Save a memory under a stable key (RememberRequest). Omit `key` for a new UUID key. "
        "Without `if_revision` the save is create-only: retrying the same save returns the "
        "stored revision, while different content under an existing key is a conflict that "
        "names the current revision. With `if_revision` it updates the head only if that is "
        "still the head's revision (history is kept: every revision stays readable). "
        "`ttl_seconds` makes it expire. Content at most 16 KiB, up to 8 tags, topic at most "
        "64 bytes, metadata at most 8 KiB. Applied directly, not held for review."
    ),
    MEMORY_RECALL: (
        "List memories (MemoryQuery), newest event first: every whitespace-separated term of "
        "`query` must occur in the content (case-insensitive); `tag`, `topic`, "
        "`since_ms`/`until_ms` filter exactly. The whole response stays within `max_bytes`; "
        "pass `next_cursor` back as `cursor` with the same filters for the next page."
    ),
    MEMORY_SEARCH: (
        "Ranked search over memories (SearchQuery, BM25). `expand: true` adds English "
        "synonyms; `expansion_terms` adds up to 8 related words of your own. A cursor is bound "
        "to the query, the filters and the store's state: after any write it is stale, so run "
        "the search again."
    ),
}
_OUTPUTS = {
    MEMORY_REMEMBER: "keyed_hit",
    MEMORY_RECALL: "keyed_recall",
    MEMORY_SEARCH: "keyed_search",
}
_INPUTS = {MEMORY_REMEMBER: "remember", MEMORY_RECALL: "recall", MEMORY_SEARCH: "search"}


def _copy(schema: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(schema))  # type: ignore[no-any-return]


def keyed_tools() -> list[types.Tool]:
    requests = load_schema("keyed_requests")
    return [
        types.Tool(
            name=name,
            title=name.replace("_", " "),
            description=_DESCRIPTIONS[name],
            input_schema=_copy(requests[_INPUTS[name]]),
            output_schema=_copy(load_schema(_OUTPUTS[name])),
            annotations=types.ToolAnnotations(
                read_only_hint=name != MEMORY_REMEMBER, open_world_hint=False
            ),
        )
        for name in KEYED_TOOLS
    ]


def call_keyed(
    engine: MemoryEngine, name: str, arguments: dict[str, Any], *, caller: str, session: str
) -> dict[str, Any]:
    if name == MEMORY_REMEMBER:
        return keyed.remember(engine, arguments, caller=caller, session=session)
    if name == MEMORY_RECALL:
        return keyed.recall(engine, arguments)
    return keyed.search(engine, arguments)
