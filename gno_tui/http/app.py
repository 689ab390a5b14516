"""The ASGI application of `gno-tui serve`: the route table as Starlette routes, /mcp as the
SDK's Streamable HTTP transport, all behind the guard, over one MemoryService."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from engine.facade import MemoryService, open_service
from gno_tui.http.dispatch import endpoint
from gno_tui.http.guard import Guard
from gno_tui.http.mcp_http import HttpMcp, session_manager
from gno_tui.http.routes import all_routes
from gno_tui.http.settings import ServeSettings

log = logging.getLogger("gno_tui.http")


def create_app(service: MemoryService, settings: ServeSettings) -> ASGIApp:
    """The whole server over `service`. The service stays open for the app's life; the
    caller closes it."""
    session = "http-" + uuid.uuid4().hex[:12]
    mcp = HttpMcp(service, session_id=session)
    manager = session_manager(mcp, max_body=settings.max_body)
    routes = all_routes()
    starlette_routes: list[Route | Mount] = [
        Route(
            route.path,
            endpoint(route, service=service, session=session, writes=mcp.writes),
            methods=[route.method],
        )
        for route in routes
    ]

    starlette_routes.append(Route("/mcp", _McpEndpoint(manager), methods=["GET", "POST", "DELETE"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # A mounted MCP app's own lifespan does not run: its session manager runs here.
        async with manager.run():
            yield

    app = Starlette(routes=starlette_routes, lifespan=lifespan)
    public = frozenset(route.path for route in routes if route.public)
    return Guard(app, service=service, settings=settings, public_paths=public)


class _McpEndpoint:
    """An ASGI app (not a function), so that Starlette hands it the raw request."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


def app_from_env() -> ASGIApp:
    """uvicorn's factory in each worker process: settings from the environment."""
    settings = ServeSettings.from_env()
    service = open_service(home=settings.home, db_url=settings.db, model=settings.model)
    return create_app(service, settings)
