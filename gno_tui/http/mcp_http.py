"""The MCP tools over Streamable HTTP at /mcp: the stdio server's registry, gate and scope
binding (gno_tui/mcp_server.py), with each request's caller and reach taken from its token.

The official SDK's session manager serves the transport; the guard (guard.py) has already
authenticated the request and left its `HttpAccess` in the ASGI scope, which the SDK hands
to each tool call as `ctx.request`. Resource subscriptions are not offered here: they re-read
a resource in fixed scopes, and a connection's scopes are its token's."""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from engine.facade import FACT_TEMPLATE, PROPOSALS_URI, MemoryFailure, MemoryService
from gno_tui.http.access import SCOPE_KEY, HttpAccess
from gno_tui.mcp_access import McpAccess
from gno_tui.mcp_server import GnoMcp

HTTP_INSTRUCTIONS = f"""\
gno-tui holds a person's long-term memory for agents. Recall before you answer (gno_recall,
with explicit scopes), and remember only what is new (gno_remember, passing the last recall's
receipt). Your token decides who you are, which scopes you may name (a call naming another is
refused with MEMORY_SCOPE_FORBIDDEN) and whether add and supersede apply at once or wait for a
person's review (the tools' descriptions say which). Facts are readable as resources by their
gno:// uri ({FACT_TEMPLATE}) while they are current; {PROPOSALS_URI} lists the proposals
waiting for a person."""


class HttpMcp(GnoMcp):
    def __init__(self, service: MemoryService, *, session_id: str) -> None:
        super().__init__(
            service, session_id=session_id, instructions=HTTP_INSTRUCTIONS, subscriptions=False
        )

    def access_for(self, ctx: ServerRequestContext[Any, Any]) -> McpAccess:
        request = ctx.request
        scope = getattr(request, "scope", None)
        access = scope.get(SCOPE_KEY) if isinstance(scope, dict) else None
        if not isinstance(access, HttpAccess):  # the guard lets nothing through without one
            raise MemoryFailure("MEMORY_AUTH_REQUIRED", "This request carries no token.")
        return access.mcp()


def session_manager(mcp: HttpMcp, *, max_body: int) -> StreamableHTTPSessionManager:
    """Stateless: every request stands alone (its caller and reach are its token's, and no
    subscription is offered), so a client's next request may reach another worker of
    `serve --workers N`, or another server behind a balancer, which never saw its session.
    Host and Origin are checked by the guard for every route, /mcp included."""
    return StreamableHTTPSessionManager(
        app=mcp.server, max_request_body_size=max_body, stateless=True
    )
