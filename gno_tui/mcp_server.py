"""`gno-tui mcp`: the memory served to agents over MCP on stdio (docs/contract.md sections 7 and 11b).

Built on the official SDK's low-level server so that the tools declare exactly the schemas we
mean: hand-written input schemas and, as output schemas, the seed result schemas verbatim.

- Identity never comes from tool arguments: the caller is "mcp:" + the client's name from the
  initialize handshake (clientInfo.name; "mcp:unknown" without one) and the session is this
  server instance's id, generated at start.
- Propose-only by default: an agent's add or supersede becomes a pending proposal in the review
  queue (the result is `candidates`); `--enable-write` applies GNO semantics.
- Errors are tool errors whose structured content is exactly {"error": {"code", "message"}};
  anything unexpected becomes MEMORY_INTERNAL the same way, never a traceback.
- Engine calls block (SQLite, files, the write lock), so they run in worker threads and the
  event loop stays free to answer pings and other requests.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.curation.review import list_proposals
from engine.storage.factfiles import parse_fact_file
from engine.storage.records import get_fact, public_fact, row_from_file
from engine.storage.store import MemoryEngine
from gno_tui import __version__
from gno_tui.mcp_keyed import KEYED_TOOLS, MEMORY_REMEMBER, call_keyed, keyed_tools
from gno_tui.mcp_tools import (
    RECALL,
    RECALL_DESCRIPTION,
    RECALL_INPUT,
    REMEMBER,
    REMEMBER_INPUT,
    check_arguments,
    output_schema,
    recall_request,
    remember_description,
    remember_request,
)

log = logging.getLogger("gno_tui.mcp")

T = TypeVar("T")

PROPOSALS_URI = "gno://review/proposals"
FACT_TEMPLATE = "gno://{collection}/facts/{day}/{file}"
_FACT_URI = re.compile(
    r"^gno://(?P<collection>[a-z0-9][a-z0-9_-]{0,63})/facts/(?P<day>\d{4}-\d{2}-\d{2})/"
    r"(?P<record>mem-[0-9a-f]{16})\.(?P<ext>md|json)$"
)
CLIENT_INFO_META_KEY = types.CLIENT_INFO_META_KEY

INSTRUCTIONS = """\
gno-tui holds a person's long-term memory for agents. Recall before you answer
(gno_recall, with explicit scopes), and remember only what is new (gno_remember, passing the
last recall's receipt). {mode} Facts are readable as resources by their gno:// uri
({template}; .md for the fact file, .json for the fact object); {proposals} lists the
proposals waiting for a person."""


def new_session_id() -> str:
    """One id per server instance: every fact and receipt this server writes carries it."""
    return "mcp-" + uuid.uuid4().hex[:12]


def caller_from(ctx: ServerRequestContext[Any, Any]) -> str:
    """The caller: "mcp:" + the client name from the handshake (or the 2026 request envelope)."""
    name: Any = None
    try:
        params = ctx.session.client_params
        if params is not None and params.client_info is not None:
            name = params.client_info.name
    except Exception:  # noqa: BLE001 - no session on some transports: fall back below
        name = None
    if not name and ctx.meta is not None:
        info = dict(ctx.meta).get(CLIENT_INFO_META_KEY)
        name = info.get("name") if isinstance(info, dict) else None
    name = name.strip() if isinstance(name, str) else ""
    return f"mcp:{name}" if name else "mcp:unknown"


def _summary(exc: BaseException) -> str:
    """The exception's type and first line, short: a database error's full text can carry SQL
    parameters (other facts' text), which an agent must not see."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:160]}" if first else type(exc).__name__


def error_result(failure: MemoryFailure) -> types.CallToolResult:
    document = failure.to_json()
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(document, ensure_ascii=False))],
        structured_content=document,
        is_error=True,
    )


def ok_result(document: dict[str, Any]) -> types.CallToolResult:
    # The text block repeats the structured result for clients that only read text.
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(document, ensure_ascii=False))],
        structured_content=document,
    )


class GnoMcp:
    """One server instance over one engine; `server` is the SDK's low-level Server."""

    def __init__(
        self, engine: MemoryEngine, *, enable_write: bool = False, session_id: str | None = None
    ) -> None:
        self.engine = engine
        self.enable_write = enable_write
        self.session_id = session_id or new_session_id()
        self._writer: anyio.CapacityLimiter | None = None
        mode = (
            "This server is WRITE-ENABLED: add and supersede apply at once."
            if enable_write
            else "This server is PROPOSE-ONLY: add and supersede wait for a person's review."
        )
        self.server: Server[Any] = Server(
            "gno-tui",
            version=__version__,
            title="gno-tui memory",
            instructions=INSTRUCTIONS.format(
                mode=mode, template=FACT_TEMPLATE, proposals=PROPOSALS_URI
            ),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
        )

    async def _blocking(
        self, func: Callable[..., T], *args: Any, writes: bool = False, **kwargs: Any
    ) -> T:
        """Run an engine call in a worker thread. Writes go through one thread, in arrival
        order: they serialize on the home's file lock anyway, and a single waiter per process
        keeps that (polled, unfair) lock shared evenly with the other processes on the home."""
        limiter = None
        if writes:
            if self._writer is None:  # created on the event loop, at first use
                self._writer = anyio.CapacityLimiter(1)
            limiter = self._writer
        call = functools.partial(func, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=limiter)

    # -- tools ------------------------------------------------------------------------------

    def tools(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=REMEMBER,
                title="Remember a fact",
                description=remember_description(self.enable_write),
                input_schema=REMEMBER_INPUT,
                output_schema=output_schema(REMEMBER),
                annotations=types.ToolAnnotations(
                    title="Remember a fact",
                    read_only_hint=False,
                    destructive_hint=False,
                    idempotent_hint=False,
                    open_world_hint=False,
                ),
            ),
            types.Tool(
                name=RECALL,
                title="Recall facts",
                description=RECALL_DESCRIPTION,
                input_schema=RECALL_INPUT,
                output_schema=output_schema(RECALL),
                annotations=types.ToolAnnotations(
                    title="Recall facts", read_only_hint=True, open_world_hint=False
                ),
            ),
            *keyed_tools(),
        ]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools())

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in (REMEMBER, RECALL, *KEYED_TOOLS):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool {params.name!r}; this server has {REMEMBER}, {RECALL} "
                f"and {', '.join(KEYED_TOOLS)}.",
            )
        caller = caller_from(ctx)
        try:
            if params.name in KEYED_TOOLS:
                result = await self._blocking(
                    call_keyed,
                    self.engine,
                    params.name,
                    params.arguments or {},
                    caller=caller,
                    session=self.session_id,
                    writes=params.name == MEMORY_REMEMBER,
                )
                return ok_result(result)
            arguments = check_arguments(params.name, params.arguments or {})
            if params.name == REMEMBER:
                request = remember_request(arguments, caller=caller, session=self.session_id)
                result = await self._blocking(
                    self.engine.remember,
                    request,
                    hold_writes=not self.enable_write,
                    origin="mcp",
                    writes=self.enable_write and request.decision in ("add", "supersede"),
                )
            else:
                query = recall_request(arguments, caller=caller, session=self.session_id)
                result = await self._blocking(self.engine.recall, query)
        except MemoryFailure as failure:
            return error_result(failure)
        except Exception as exc:
            log.exception("%s failed unexpectedly", params.name)
            return error_result(
                MemoryFailure(
                    "MEMORY_INTERNAL",
                    f"{params.name} failed inside gno-tui ({_summary(exc)}). Retry "
                    "once; if it persists, tell the person running gno-tui (the server log has "
                    "the details).",
                )
            )
        return ok_result(result)

    # -- resources --------------------------------------------------------------------------

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=PROPOSALS_URI,
                    name="review-proposals",
                    title="Pending proposals",
                    description="The writes waiting for a person's review, as JSON "
                    '({"proposals": [...]}, the same as `gno-tui review --list --json`).',
                    mime_type="application/json",
                )
            ]
        )

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=FACT_TEMPLATE,
                    name="fact",
                    title="A stored fact",
                    description="A fact by its gno:// uri, as recall and remember report it: "
                    "mem-<16 hex>.md is the fact file (Markdown with YAML front matter); "
                    "the same name ending .json is the fact object of the remember result schema.",
                )
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text, mime = await self._blocking(self.read_uri, uri)
        except MemoryFailure as failure:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=failure.message,
                data={"uri": uri, **failure.to_json()},
            ) from None
        except Exception as exc:
            log.exception("reading %s failed unexpectedly", uri)
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"Reading {uri} failed inside gno-tui ({type(exc).__name__}).",
                data={"uri": uri},
            ) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime)]
        )

    def read_uri(self, uri: str) -> tuple[str, str]:
        """The text and MIME type of a resource (blocking: runs in a worker thread)."""
        if uri == PROPOSALS_URI:
            return json.dumps(
                {"proposals": list_proposals(self.engine)}, ensure_ascii=False
            ), "application/json"
        match = _FACT_URI.match(uri)
        if match is None:
            raise MemoryFailure(
                "MEMORY_NOT_FOUND",
                f"{uri} is not a resource of this server: read {PROPOSALS_URI} or a fact uri "
                "gno://<collection>/facts/<YYYY-MM-DD>/mem-<16 hex>.md (or .json).",
            )
        collection, day, record = match["collection"], match["day"], match["record"]
        md_uri = f"gno://{collection}/facts/{day}/{record}.md"
        with Session(self.engine.db, expire_on_commit=False) as session:
            row = get_fact(session, ref=md_uri)
        root = self.engine.collection_root(collection)
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

    # -- running ----------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        async with stdio_server() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )


def serve(engine: MemoryEngine, *, enable_write: bool = False) -> None:
    """Serve until the client closes stdin. Logs go to stderr; stdout is the protocol."""
    logging.basicConfig(level=logging.WARNING, format="gno-tui mcp: %(levelname)s %(message)s")
    app = GnoMcp(engine, enable_write=enable_write)
    log.info(
        "serving session %s (%s)",
        app.session_id,
        "write-enabled" if enable_write else "propose-only",
    )
    anyio.run(app.run_stdio)
