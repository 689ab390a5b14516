"""The ASGI application of `gno-tui serve`: the route table as Starlette routes, /mcp as the
SDK's Streamable HTTP transport, all behind the guard, over one MemoryService."""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import AsyncIterator

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from engine.facade import MemoryFailure, MemoryService, open_service_patiently
from gno_tui.cli_store import SERVER_START_PATIENCE, said_once
from gno_tui.http.dispatch import endpoint
from gno_tui.http.guard import Guard
from gno_tui.http.mcp_http import HttpMcp, session_manager
from gno_tui.http.openapi import OPENAPI_PATH, document
from gno_tui.http.registry import all_routes
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
    openapi = document(routes)

    async def openapi_endpoint(request: Request) -> Response:
        return JSONResponse(openapi)

    starlette_routes.append(Route(OPENAPI_PATH, openapi_endpoint, methods=["GET"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # A mounted MCP app's own lifespan does not run: its session manager runs here.
        async with manager.run():
            yield

    app = Starlette(
        routes=starlette_routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _routing_error},
    )
    public = frozenset({OPENAPI_PATH, *(route.path for route in routes if route.public)})
    return Guard(app, service=service, settings=settings, public_paths=public)


async def _routing_error(request: Request, exc: Exception) -> Response:
    """A path no route matches (404) or a method its route does not take (405), answered
    as every other error is: {"error": {"code", "message"}}, not Starlette's plain text."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    headers = exc.headers if isinstance(exc, HTTPException) else None
    if status == 404:
        failure = MemoryFailure(
            "MEMORY_NOT_FOUND",
            "No route has this path. GET /openapi.json lists the routes; a key or id in a "
            "path must be percent-encoded and hold no control characters.",
        )
    else:
        failure = MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"This route does not take {request.method[:16]!r}"
            + (f": it takes {headers['Allow']}." if headers and "Allow" in headers else ".")
            + " GET /openapi.json lists the routes and their methods.",
        )
    return JSONResponse(failure.to_json(), status_code=status, headers=headers)


class _McpEndpoint:
    """An ASGI app (not a function), so that Starlette hands it the raw request."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


def open_served_store(settings: ServeSettings) -> MemoryService:
    """The store `gno-tui serve` (and each of its workers) serves: a database server that is
    down or restarting as it starts is waited for (SERVER_START_PATIENCE)."""
    return open_service_patiently(
        said_once("serve", settings.db or os.environ.get("GNO_TUI_DB") or ""),
        patience=SERVER_START_PATIENCE,
        home=settings.home,
        db_url=settings.db,
        model=settings.model,
    )


def app_from_env() -> ASGIApp:
    """uvicorn's factory in each worker process: settings from the environment."""
    settings = ServeSettings.from_env()
    return create_app(open_served_store(settings), settings)
