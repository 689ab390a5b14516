"""`gno-tui mcp`: the memory served to agents over MCP on stdio (docs/contract.md sections 7
and 11b).

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

The tools are the entries of gno_tui/mcp_registry.TOOLS; this module lists and dispatches them.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from engine.facade import FACT_TEMPLATE, PROPOSALS_URI, MemoryFailure, MemoryService
from gno_tui import __version__
from gno_tui.mcp_registry import TOOLS, TOOLS_BY_NAME, ToolCall, tool_names
from gno_tui.mcp_tools import check_arguments

log = logging.getLogger("gno_tui.mcp")

T = TypeVar("T")

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
    """One server instance over one store; `server` is the SDK's low-level Server."""

    def __init__(
        self,
        service: MemoryService,
        *,
        enable_write: bool = False,
        session_id: str | None = None,
    ) -> None:
        self.service = service
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
        return [tool.listing(enable_write=self.enable_write) for tool in TOOLS]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools())

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool {params.name!r}; this server has {tool_names()}.",
            )
        caller = caller_from(ctx)
        try:
            arguments = params.arguments or {}
            if tool.checked:
                arguments = check_arguments(tool.name, tool.input_schema, arguments)
            call = ToolCall(
                service=self.service,
                arguments=arguments,
                caller=caller,
                session=self.session_id,
                hold_writes=tool.holds_writes(enable_write=self.enable_write),
            )
            result = await self._blocking(
                tool.handler,
                call,
                writes=tool.writes_now(arguments, enable_write=self.enable_write),
            )
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
        return self.service.facts.read_resource(uri)

    # -- running ----------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        async with stdio_server() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )


def serve(service: MemoryService, *, enable_write: bool = False) -> None:
    """Serve until the client closes stdin. Logs go to stderr; stdout is the protocol."""
    logging.basicConfig(level=logging.WARNING, format="gno-tui mcp: %(levelname)s %(message)s")
    app = GnoMcp(service, enable_write=enable_write)
    log.info(
        "serving session %s (%s)",
        app.session_id,
        "write-enabled" if enable_write else "propose-only",
    )
    anyio.run(app.run_stdio)
