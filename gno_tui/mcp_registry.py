"""The MCP server's tools, in one table: `TOOLS`. The tools listing, the call dispatch, the
propose-only gate and the scope binding all read it, so adding a tool is adding one `Tool`
entry here.

The gno_* tools' schemas, descriptions and argument checks are in gno_tui/mcp_tools.py; the
memory_* (keyed, seed 003) tools take the seed's requests unchanged, which the engine validates
before anything runs."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from engine.facade import (
    KEYED_COLLECTION,
    KEYED_HELD_SCHEMA,
    KeyedHeld,
    KeyedHit,
    KeyedRecallResponse,
    KeyedSearchResponse,
    MemoryFailure,
    MemoryService,
    RecallResult,
    RememberResult,
    load_schema,
)
from gno_tui.egress_ceiling import require_admitted, stricter_egress
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
    hold_writes: bool  # a gated tool on a propose-only server: queue its writes for review
    # The scopes the server is bound to (--allow-scope), normalised; None: every scope. The
    # server has already refused a call naming another scope (Tool.named_scopes).
    allowed_scopes: frozenset[str] | None = None
    origin: str = "mcp"  # the surface, as a held proposal records it ("mcp", "http")
    egress: str = "local_only"  # the least egress ceiling of a recall (a token's, over HTTP)


@dataclass(frozen=True)
class Tool:
    """One MCP tool: what the listing declares and what a call runs."""

    name: str
    title: str
    # The text, or the text for a server that is (True) or is not (False) write-enabled.
    description: str | Callable[[bool], str]
    input_schema: dict[str, Any]
    # The result schema (the seed's, verbatim), or the schema for a server that is (True) or
    # is not (False) write-enabled.
    output_schema: dict[str, Any] | Callable[[bool], dict[str, Any]]
    handler: Callable[[ToolCall], Mapping[str, Any]]
    # The scopes a call names (before normalisation): on a server bound with --allow-scope,
    # a call naming any other scope is refused before the handler runs.
    named_scopes: Callable[[MemoryService, dict[str, Any]], list[Any]]
    writes: bool = False  # may change the store (else it is declared read-only)
    # The propose-only gate: on a server without --enable-write the tool's writes are held as
    # proposals for a person (the handler sees ToolCall.hold_writes).
    gated: bool = False
    # The tool takes a `decision` and only its add and supersede write (gno_remember).
    decides: bool = False
    # Its writes go through remember's write path only, so several may share one group
    # commit (gno_tui/mcp_writes.py); any other write runs alone.
    groups: bool = False
    # Work a write call can do before it takes the write lock (gno_tui/mcp_writes.py runs it
    # for the writes waiting, outside the lock): less held, less for other writers to wait.
    ahead: Callable[[ToolCall], None] | None = None
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

    def output(self, enable_write: bool) -> dict[str, Any]:
        schema = self.output_schema
        return schema if isinstance(schema, dict) else schema(enable_write)

    def listing(self, *, enable_write: bool) -> types.Tool:
        """The tool as tools/list declares it (schemas copied: the table's must not change)."""
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.describe(enable_write),
            input_schema=copy.deepcopy(self.input_schema),
            output_schema=copy.deepcopy(self.output(enable_write)),
            annotations=self.annotations
            or types.ToolAnnotations(read_only_hint=not self.writes, open_world_hint=False),
        )

    def holds_writes(self, *, enable_write: bool) -> bool:
        """Whether this tool's writes wait for a person's review."""
        return self.gated and not enable_write

    def groups_with(self, arguments: dict[str, Any]) -> bool:
        """Whether this call may share a group commit: a write with a requestId runs alone,
        for its record is written under the lock, beside the group's transaction."""
        return self.groups and "requestId" not in arguments

    def writes_now(self, arguments: dict[str, Any], *, enable_write: bool) -> bool:
        """Whether this call changes the store: then it runs on the server's one writer
        thread (a held proposal or a propose does not)."""
        if not self.writes or self.holds_writes(enable_write=enable_write):
            return False
        return not self.decides or arguments.get("decision") in WRITE_DECISIONS


# -- handlers (blocking: they run in a worker thread) ----------------------------------------


def _gno_remember(call: ToolCall) -> RememberResult:
    arguments = dict(call.arguments)
    request_id = arguments.pop("requestId", None)
    request = remember_request(arguments, caller=call.caller, session=call.session)
    if call.allowed_scopes is not None and request.predecessor:
        _require_visible_predecessor(call.service, request.predecessor, call.allowed_scopes)
    require_admitted(call.service, request.collection, call.egress, "This remember")

    def run() -> RememberResult:
        result = call.service.remember(request, hold_writes=call.hold_writes, origin=call.origin)
        if call.origin == "http" and "absPath" in result:
            # The server's disk is not the remote agent's business: the fact's address is
            # its uri, as in the server mode.
            result = {**result, "absPath": result["record"]["uri"]}
        return result

    if request_id is None:
        return run()
    result, _ = call.service.access.once(
        caller=call.caller, request_id=request_id, verb="remember", body=arguments, run=run
    )
    return result


def _gno_remember_ahead(call: ToolCall) -> None:
    call.service.embed_ahead(call.arguments.get("text"))


def _require_visible_predecessor(service: MemoryService, uri: str, allowed: frozenset[str]) -> None:
    """On a bound server a supersede may only replace a fact of the allowed scopes; any other
    is refused as if it did not exist (the answer must not tell an agent that it does)."""
    try:
        row = service.facts.get(uri)
    except MemoryFailure:
        row = None
    if row is None or not allowed & set(row.scopes):
        raise MemoryFailure(
            "MEMORY_PREDECESSOR_NOT_FOUND",
            "The predecessor is not a fact of this server's scopes "
            f"({', '.join(sorted(allowed))}). Recall in those scopes and pass the uri and "
            "contentHash of a fact it returned.",
        )


def _gno_recall(call: ToolCall) -> RecallResult:
    request = recall_request(call.arguments, caller=call.caller, session=call.session)
    request.egress = stricter_egress(request.egress, call.egress)
    return call.service.recall(request)


def _memory_remember(call: ToolCall) -> KeyedHeld | KeyedHit:
    require_admitted(call.service, KEYED_COLLECTION, call.egress, "The keyed API")
    if call.hold_writes:  # a propose-only server: queued for a person, nothing written
        return call.service.keyed.propose(
            call.arguments, caller=call.caller, session=call.session, origin=call.origin
        )
    return call.service.keyed.remember(call.arguments, caller=call.caller, session=call.session)


def _memory_recall(call: ToolCall) -> KeyedRecallResponse:
    require_admitted(call.service, KEYED_COLLECTION, call.egress, "The keyed API")
    return call.service.keyed.recall(call.arguments)


def _memory_search(call: ToolCall) -> KeyedSearchResponse:
    require_admitted(call.service, KEYED_COLLECTION, call.egress, "The keyed API")
    return call.service.keyed.search(call.arguments)


def _argument_scopes(service: MemoryService, arguments: dict[str, Any]) -> list[Any]:
    scopes = arguments.get("scopes")
    return list(scopes) if isinstance(scopes, list) else []


def _keyed_scopes(service: MemoryService, arguments: dict[str, Any]) -> list[Any]:
    return [service.keyed.scope()]  # kv:default: MCP has no namespace argument


_KEYED_REQUESTS = load_schema("keyed_requests")


def one_of(title: str, *schemas: dict[str, Any]) -> dict[str, Any]:
    """One object schema that a document meets by meeting exactly one of `schemas`, their
    `$defs` lifted to the top so that each one's local `#/$defs/...` references resolve."""
    branches: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}
    for schema in schemas:
        branch = copy.deepcopy(schema)
        branch.pop("$schema", None)
        for name, definition in branch.pop("$defs", {}).items():
            if name in defs and defs[name] != definition:
                raise ValueError(f"{title}: two schemas define $defs/{name} differently")
            defs[name] = definition
        branches.append(branch)
    combined: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "oneOf": branches,
    }
    if defs:
        combined["$defs"] = defs
    return combined


_KEYED_REMEMBER_HELD = one_of(
    "KeyedMemoryRememberOrHeld",
    load_schema("keyed_hit"),
    load_schema(KEYED_HELD_SCHEMA),
)


def _keyed_remember_output(enable_write: bool) -> dict[str, Any]:
    """A write-enabled server answers the hit; a propose-only one the held result (or the
    stored hit, when a create is retried after its write)."""
    return load_schema("keyed_hit") if enable_write else _KEYED_REMEMBER_HELD


_KEYED_REMEMBER = (
    "Save a memory under a stable key (RememberRequest). Omit `key` for a new UUID key. "
    "Without `if_revision` the save is create-only: retrying the same save returns the "
    "stored revision, while different content under an existing key is a conflict that "
    "names the current revision. With `if_revision` it updates the head only if that is "
    "still the head's revision (history is kept: every revision stays readable). "
    "`ttl_seconds` makes it expire. Content at most 16 KiB, up to 8 tags, topic at most "
    "64 bytes, metadata at most 8 KiB. "
)
_KEYED_WRITE_ENABLED = "This server is WRITE-ENABLED: the save is applied at once."
_KEYED_PROPOSE_ONLY = (
    "This server is PROPOSE-ONLY: the save is not written but held for a person's review, "
    'and the result is {"status": "held", "proposal_id", "key", "if_revision", "message"}. '
    "The key and revision checks run now (a conflict is an error at once, as on a "
    "write-enabled server) and again when the person accepts it, which writes exactly the "
    "request you sent under `key`; a rejection drops it. Until then recall and search do "
    "not return it. Sending the same request again returns the same proposal; do not retry."
)


def _keyed_remember_description(enable_write: bool) -> str:
    return _KEYED_REMEMBER + (_KEYED_WRITE_ENABLED if enable_write else _KEYED_PROPOSE_ONLY)


# Keyed writes on a propose-only server are held for a person too (gated), whole: accepting
# the proposal in review applies the request under the key's compare-and-swap.
TOOLS: tuple[Tool, ...] = (
    Tool(
        name="gno_remember",
        title="Remember a fact",
        description=remember_description,
        input_schema=REMEMBER_INPUT,
        output_schema=load_schema("remember"),
        handler=_gno_remember,
        named_scopes=_argument_scopes,
        writes=True,
        gated=True,
        decides=True,
        groups=True,
        ahead=_gno_remember_ahead,
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
        named_scopes=_argument_scopes,
        checked=True,
        annotations=types.ToolAnnotations(
            title="Recall facts", read_only_hint=True, open_world_hint=False
        ),
    ),
    Tool(
        name="memory_remember",
        title="memory remember",
        description=_keyed_remember_description,
        input_schema=_KEYED_REQUESTS["remember"],
        output_schema=_keyed_remember_output,
        handler=_memory_remember,
        named_scopes=_keyed_scopes,
        writes=True,
        gated=True,
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
        named_scopes=_keyed_scopes,
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
        named_scopes=_keyed_scopes,
    ),
)

TOOLS_BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}
if len(TOOLS_BY_NAME) != len(TOOLS):
    raise ValueError("two MCP tools share a name")


def tool_names() -> str:
    """The tools' names as a sentence lists them: "a, b and c"."""
    names = [tool.name for tool in TOOLS]
    return f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
