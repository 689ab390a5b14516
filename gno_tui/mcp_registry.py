"""The MCP server's tools, in one table: `TOOLS`. The tools listing, the call dispatch and the
propose-only gate all read it, so adding a tool is adding one `Tool` entry here.

The gno_* tools' schemas, descriptions and argument checks are in gno_tui/mcp_tools.py; the
memory_* (keyed, seed 003) tools take the seed's requests unchanged, which the engine validates
before anything runs."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from engine.facade import MemoryService, load_schema
from gno_tui.mcp_tools import (
    RECALL_DESCRIPTION,
    RECALL_INPUT,
    REMEMBER_INPUT,
    recall_request,
    remember_description,
    remember_request,
)

# The decisions of a gated tool that write; on a propose-only server they are held instead.
WRITE_DECISIONS = ("add", "supersede")


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool, as its handler gets it (in a worker thread)."""

    service: MemoryService
    arguments: dict[str, Any]
    caller: str  # "mcp:" + the client's name, from the connection, never from arguments
    session: str  # the server instance's id
    hold_writes: bool  # a gated tool on a propose-only server: queue add/supersede for review


@dataclass(frozen=True)
class Tool:
    """One MCP tool: what the listing declares and what a call runs."""

    name: str
    title: str
    # The text, or the text for a server that is (True) or is not (False) write-enabled.
    description: str | Callable[[bool], str]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]  # the seed result schema, verbatim
    handler: Callable[[ToolCall], dict[str, Any]]
    writes: bool = False  # may change the store (else it is declared read-only)
    # The propose-only gate: the tool takes a `decision`, and on a server without
    # --enable-write an add or supersede is held as a proposal for a person.
    gated: bool = False
    # The arguments are checked against input_schema before the engine sees them, and a
    # violation becomes the contract code for that argument (mcp_tools.check_arguments).
    checked: bool = False
    # The listing's annotations; without them, read-only (or not, as `writes` says) and
    # closed-world.
    annotations: types.ToolAnnotations | None = None

    def __post_init__(self) -> None:
        hints = self.annotations
        if hints is not None and hints.read_only_hint is not (not self.writes):
            raise ValueError(f"{self.name}: read_only_hint must say the opposite of `writes`")

    def describe(self, enable_write: bool) -> str:
        return (
            self.description
            if isinstance(self.description, str)
            else self.description(enable_write)
        )

    def listing(self, *, enable_write: bool) -> types.Tool:
        """The tool as tools/list declares it (schemas copied: the table's must not change)."""
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.describe(enable_write),
            input_schema=copy.deepcopy(self.input_schema),
            output_schema=copy.deepcopy(self.output_schema),
            annotations=self.annotations
            or types.ToolAnnotations(read_only_hint=not self.writes, open_world_hint=False),
        )

    def holds_writes(self, *, enable_write: bool) -> bool:
        """Whether this tool's add and supersede wait for a person's review."""
        return self.gated and not enable_write

    def writes_now(self, arguments: dict[str, Any], *, enable_write: bool) -> bool:
        """Whether this call changes the store: then it runs on the server's one writer
        thread (a held proposal or a propose does not)."""
        if not self.writes:
            return False
        if not self.gated:
            return True
        return enable_write and arguments.get("decision") in WRITE_DECISIONS


# -- handlers (blocking: they run in a worker thread) ----------------------------------------


def _gno_remember(call: ToolCall) -> dict[str, Any]:
    request = remember_request(call.arguments, caller=call.caller, session=call.session)
    return call.service.remember(request, hold_writes=call.hold_writes, origin="mcp")


def _gno_recall(call: ToolCall) -> dict[str, Any]:
    request = recall_request(call.arguments, caller=call.caller, session=call.session)
    return call.service.recall(request)


def _memory_remember(call: ToolCall) -> dict[str, Any]:
    return call.service.keyed.remember(call.arguments, caller=call.caller, session=call.session)


def _memory_recall(call: ToolCall) -> dict[str, Any]:
    return call.service.keyed.recall(call.arguments)


def _memory_search(call: ToolCall) -> dict[str, Any]:
    return call.service.keyed.search(call.arguments)


_KEYED_REQUESTS = load_schema("keyed_requests")

# Keyed writes apply directly even on a propose-only server (not gated): a key's revisions
# are compare-and-swap updates an agent retries on, which cannot wait for a person (the facts
# still show in the workbench for curation).
TOOLS: tuple[Tool, ...] = (
    Tool(
        name="gno_remember",
        title="Remember a fact",
        description=remember_description,
        input_schema=REMEMBER_INPUT,
        output_schema=load_schema("remember"),
        handler=_gno_remember,
        writes=True,
        gated=True,
        checked=True,
        annotations=types.ToolAnnotations(
            title="Remember a fact",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    ),
    Tool(
        name="gno_recall",
        title="Recall facts",
        description=RECALL_DESCRIPTION,
        input_schema=RECALL_INPUT,
        output_schema=load_schema("recall"),
        handler=_gno_recall,
        checked=True,
        annotations=types.ToolAnnotations(
            title="Recall facts", read_only_hint=True, open_world_hint=False
        ),
    ),
    Tool(
        name="memory_remember",
        title="memory remember",
        description=(
            "Save a memory under a stable key (RememberRequest). Omit `key` for a new UUID key. "
            "Without `if_revision` the save is create-only: retrying the same save returns the "
            "stored revision, while different content under an existing key is a conflict that "
            "names the current revision. With `if_revision` it updates the head only if that is "
            "still the head's revision (history is kept: every revision stays readable). "
            "`ttl_seconds` makes it expire. Content at most 16 KiB, up to 8 tags, topic at most "
            "64 bytes, metadata at most 8 KiB. Applied directly, not held for review."
        ),
        input_schema=_KEYED_REQUESTS["remember"],
        output_schema=load_schema("keyed_hit"),
        handler=_memory_remember,
        writes=True,
    ),
    Tool(
        name="memory_recall",
        title="memory recall",
        description=(
            "List memories (MemoryQuery), newest event first: every whitespace-separated term "
            "of `query` must occur in the content (case-insensitive); `tag`, `topic`, "
            "`since_ms`/`until_ms` filter exactly. The whole response stays within "
            "`max_bytes`; pass `next_cursor` back as `cursor` with the same filters for the "
            "next page."
        ),
        input_schema=_KEYED_REQUESTS["recall"],
        output_schema=load_schema("keyed_recall"),
        handler=_memory_recall,
    ),
    Tool(
        name="memory_search",
        title="memory search",
        description=(
            "Ranked search over memories (SearchQuery, BM25). `expand: true` adds English "
            "synonyms; `expansion_terms` adds up to 8 related words of your own. A cursor is "
            "bound to the query, the filters and the store's state: after any write it is "
            "stale, so run the search again."
        ),
        input_schema=_KEYED_REQUESTS["search"],
        output_schema=load_schema("keyed_search"),
        handler=_memory_search,
    ),
)

TOOLS_BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}
if len(TOOLS_BY_NAME) != len(TOOLS):
    raise ValueError("two MCP tools share a name")


def tool_names() -> str:
    """The tools' names as a sentence lists them: "a, b and c"."""
    names = [tool.name for tool in TOOLS]
    return f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
