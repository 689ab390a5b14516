"""`gno-tui mcp`: the memory served to agents over MCP on stdio (docs/contract.md sections 7
and 11b, docs/mcp.md).

Built on the official SDK's low-level server so that the tools declare exactly the schemas we
mean: hand-written input schemas and, as output schemas, the seed result schemas verbatim.

- Identity never comes from tool arguments: the caller is "mcp:" + the client's name, fixed
  per connection when the connection names its client (the initialize handshake's
  clientInfo.name; on the 2026-07-28 protocol, the first request's envelope) and never changed
  by a later request's `_meta`. The name is cleaned (escape sequences and control characters
  removed, at most 64 characters; "mcp:unknown" without one). The session is this server
  instance's id, generated at start.
- Propose-only by default: an agent's add or supersede becomes a pending proposal in the review
  queue (the result is `candidates`), and so does a keyed remember (the result is `held`);
  `--enable-write` applies them at once.
- Scopes: `--allow-scope S ...` binds the server to those scopes. A tool call naming any other
  is refused (MEMORY_SCOPE_FORBIDDEN; the keyed tools name kv:default), and resources show only
  what a recall in those scopes would. Without it the server serves every scope, and says so in
  its instructions and on stderr at start.
- Errors are tool errors whose structured content is exactly {"error": {"code", "message"}};
  anything unexpected becomes MEMORY_INTERNAL the same way, never a traceback. A string that
  is not Unicode text (a lone surrogate from a JSON \\u escape) is MEMORY_TEXT_INVALID, logged,
  rather than a request dropped unanswered.
- Engine calls block (SQLite, files, the write lock), so they run in worker threads and the
  event loop stays free to answer pings and other requests. Writes go through one lane, in
  arrival order; remember writes that wait together share one group commit
  (gno_tui/mcp_writes.py), each answered once its group is durable.

The tools are the entries of gno_tui/mcp_registry.TOOLS; this module lists and dispatches them.
"""

from __future__ import annotations

import functools
import json
import logging
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engine.facade import (
    FACT_TEMPLATE,
    PROPOSALS_URI,
    MemoryFailure,
    MemoryService,
)
from gno_tui import __version__
from gno_tui.egress_ceiling import NO_CEILING, admitted_collections
from gno_tui.mcp_access import (
    McpAccess,
    bind_scopes,
    caller_for_name,
    check_bound_scopes,
    envelope_name,
    handshake_name,
    new_session_id,
    session_client_name,
)
from gno_tui.mcp_drain import AnswersOwed, NotedWrites
from gno_tui.mcp_pipes import served_stdio
from gno_tui.mcp_registry import TOOLS, TOOLS_BY_NAME, ToolCall, tool_names
from gno_tui.mcp_subscriptions import ResourceSubscriptions
from gno_tui.mcp_tools import check_arguments
from gno_tui.mcp_wire import first_invalid_text, printable, relay, summary, text_invalid
from gno_tui.mcp_writes import WriteLane

log = logging.getLogger("gno_tui.mcp")

T = TypeVar("T")


INSTRUCTIONS = """\
gno-tui holds a person's long-term memory for agents. Recall before you answer
(gno_recall, with explicit scopes), and remember only what is new (gno_remember, passing the
last recall's receipt). {mode} {scopes} Facts are readable as resources by their gno:// uri
({template}; .md for the fact file, .json for the fact object) while they are current;
{proposals} lists the proposals waiting for a person."""


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
        allowed_scopes: Iterable[str] | None = None,
        instructions: str | None = None,
        subscriptions: bool = True,
    ) -> None:
        self.service = service
        self.enable_write = enable_write
        self.session_id = session_id or new_session_id()
        self.allowed_scopes = bind_scopes(allowed_scopes)
        self.writes = WriteLane(service)
        # resources/subscribe (and 2026's subscriptions/listen): re-read in the bound scopes.
        self.subscriptions = ResourceSubscriptions(service, self.read_uri)
        # The caller of each handshake connection, fixed at its initialize. On the 2026
        # protocol every request builds its own connection object, so the first request's
        # envelope fixes the caller of this server's stream (stdio: one per process).
        self._callers: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._stream_caller: str | None = None
        mode = (
            "This server is WRITE-ENABLED: add and supersede apply at once."
            if enable_write
            else "This server is PROPOSE-ONLY: add and supersede, and keyed saves "
            "(memory_remember), wait for a person's review."
        )
        self.server: Server[Any] = Server(
            "gno-tui",
            version=__version__,
            title="gno-tui memory",
            instructions=instructions
            or INSTRUCTIONS.format(
                mode=mode,
                scopes=self.scope_sentence(),
                template=FACT_TEMPLATE,
                proposals=PROPOSALS_URI,
            ),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
            # Subscriptions re-read a resource in the server's scopes, so only a server
            # whose scopes are fixed (stdio) offers them.
            on_subscribe_resource=self.subscriptions.subscribe if subscriptions else None,
            on_unsubscribe_resource=self.subscriptions.unsubscribe if subscriptions else None,
            on_subscriptions_listen=self.subscriptions.listen if subscriptions else None,
        )
        self.server.middleware.append(self._fix_identity)

    def scope_sentence(self) -> str:
        if self.allowed_scopes is None:
            return (
                "This server serves EVERY scope of its store (it was started without "
                "--allow-scope)."
            )
        return (
            f"This server is bound to the scopes {', '.join(sorted(self.allowed_scopes))}: a "
            "call naming any other scope is refused (MEMORY_SCOPE_FORBIDDEN), and resources "
            "show only the facts and proposals of these scopes. The keyed memory_* tools work "
            "in the scope kv:default."
        )

    async def _blocking(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run an engine call (a read) in a worker thread."""
        return await anyio.to_thread.run_sync(functools.partial(func, *args, **kwargs))

    # -- identity ---------------------------------------------------------------------------

    async def _fix_identity(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Middleware: an initialize request fixes its connection's caller; a second
        initialize on the same connection does not change it."""
        if ctx.method == "initialize":
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None and connection not in self._callers:
                self._callers[connection] = caller_for_name(handshake_name(ctx.params))
        return await call_next(ctx)

    def caller_for(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """The caller of the request's connection, fixed once; a request's `_meta` never
        chooses it on a handshake connection."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if self._stream_caller is None:
                self._stream_caller = caller_for_name(envelope_name(ctx))
            return self._stream_caller
        connection = getattr(ctx.session, "_connection", None)
        if connection is None:  # nothing to key on: this server's one stream
            if self._stream_caller is None:
                self._stream_caller = caller_for_name(session_client_name(ctx))
            return self._stream_caller
        caller = self._callers.get(connection)
        if caller is None:  # a connection whose initialize the middleware did not see
            caller = self._callers[connection] = caller_for_name(session_client_name(ctx))
        return caller

    def access_for(self, ctx: ServerRequestContext[Any, Any]) -> McpAccess:
        """The request's caller and reach; a server over HTTP takes them from the token."""
        return McpAccess(self.caller_for(ctx), self.allowed_scopes, self.enable_write)

    # -- tools ------------------------------------------------------------------------------

    def tools(self, enable_write: bool | None = None) -> list[types.Tool]:
        write = self.enable_write if enable_write is None else enable_write
        return [tool.listing(enable_write=write) for tool in TOOLS]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools(self.access_for(ctx).enable_write))

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool {params.name!r}; this server has {tool_names()}.",
            )
        access = self.access_for(ctx)
        try:
            arguments = params.arguments or {}
            if (where := first_invalid_text(arguments)) is not None:
                log.warning(
                    "%s request %s refused: %s holds a lone surrogate or bytes that are not UTF-8 "
                    "(MEMORY_TEXT_INVALID)",
                    tool.name,
                    printable(ctx.request_id),
                    where,
                )
                raise text_invalid(where)
            if tool.checked:
                arguments = check_arguments(tool.name, tool.input_schema, arguments)
            check_bound_scopes(
                tool.name, tool.named_scopes(self.service, arguments), access.allowed_scopes
            )
            call = ToolCall(
                service=self.service,
                arguments=arguments,
                caller=access.caller,
                session=self.session_id,
                hold_writes=tool.holds_writes(enable_write=access.enable_write),
                allowed_scopes=access.allowed_scopes,
                origin=access.origin,
                egress=access.egress,
            )
            if tool.writes_now(arguments, enable_write=access.enable_write):
                ahead = None if tool.ahead is None else functools.partial(tool.ahead, call)
                result = await self.writes.run(
                    functools.partial(tool.handler, call),
                    groups=tool.groups_with(arguments),
                    ahead=ahead,
                )
            else:
                result = await self._blocking(tool.handler, call)
        except MemoryFailure as failure:
            return error_result(failure)
        except Exception as exc:
            log.exception("%s failed unexpectedly", params.name)
            return error_result(
                MemoryFailure(
                    "MEMORY_INTERNAL",
                    f"{params.name} failed inside gno-tui ({summary(exc)}). Retry "
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
                    '({"proposals": [...]}, shaped as `gno-tui review --list --json` prints '
                    "them), limited to this server's scopes and to candidates a recall in "
                    "them would return.",
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
                    description="A current fact by its gno:// uri, exactly as recall and "
                    "remember report it: mem-<16 hex>.md is the fact file (Markdown with YAML "
                    "front matter); the same name ending .json is the fact object of the "
                    "remember result schema. Superseded, retired and expired facts are not "
                    "served, nor facts outside this server's scopes.",
                )
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if first_invalid_text(uri, "uri") is not None:
            log.warning(
                "resources/read request %s refused: the uri holds a lone surrogate "
                "(MEMORY_TEXT_INVALID)",
                printable(ctx.request_id),
            )
            failure = text_invalid("uri")
            raise MCPError(  # the uri is not echoed: it cannot be encoded
                code=types.INVALID_PARAMS, message=failure.message, data=failure.to_json()
            )
        shown = uri if len(uri) <= 300 else uri[:300] + "..."
        try:
            access = self.access_for(ctx)
            text, mime = await self._blocking(
                self.read_uri, uri, access.allowed_scopes, access.egress
            )
        except MemoryFailure as failure:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=failure.message,
                data={"uri": shown, **failure.to_json()},
            ) from None
        except Exception as exc:
            log.exception("reading %s failed unexpectedly", shown)
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"Reading a resource failed inside gno-tui ({type(exc).__name__}).",
                data={"uri": shown},
            ) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime)]
        )

    def read_uri(
        self, uri: str, scopes: frozenset[str] | None = None, egress: str = NO_CEILING
    ) -> tuple[str, str]:
        """The text and MIME type of a resource as a recall in the bound scopes (and within
        an egress ceiling's collections) would see it (blocking: runs in a worker thread)."""
        bound = self.allowed_scopes if scopes is None else scopes
        collections = admitted_collections(self.service, egress)
        return self.service.facts.read_resource(uri, scopes=bound, collections=collections)

    # -- running ----------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        async with served_stdio() as (read_stream, transport_writes):
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            owed = AnswersOwed()
            write_stream = NotedWrites(transport_writes, owed)
            async with anyio.create_task_group() as group:
                group.start_soon(relay, read_stream, send, write_stream, owed)
                group.start_soon(self.subscriptions.run)
                await self.server.run(
                    receive, write_stream, self.server.create_initialization_options()
                )
                group.cancel_scope.cancel()


def serve(
    service: MemoryService,
    *,
    enable_write: bool = False,
    allowed_scopes: Iterable[str] | None = None,
) -> None:
    """Serve until the client closes stdin. Logs go to stderr; stdout is the protocol."""
    logging.basicConfig(level=logging.WARNING, format="gno-tui mcp: %(levelname)s %(message)s")
    log.setLevel(logging.INFO)  # our start line and refusals; the SDK's logs stay at WARNING
    app = GnoMcp(service, enable_write=enable_write, allowed_scopes=allowed_scopes)
    mode = "write-enabled" if enable_write else "propose-only"
    if app.allowed_scopes is None:
        log.warning(
            "serving session %s (%s) for EVERY scope of %s: no --allow-scope was given, so "
            "any agent on this server reads and writes every scope. Bind it with "
            "`gno-tui mcp --allow-scope SCOPE ...`.",
            app.session_id,
            mode,
            service.home,
        )
    else:
        log.info(
            "serving session %s (%s), bound to the scopes %s",
            app.session_id,
            mode,
            ", ".join(sorted(app.allowed_scopes)),
        )
    anyio.run(app.run_stdio)
