"""What an HTTP route is: an `HttpRoute` entry, the `RouteCall` its handler gets and the
`Reply` it returns. The table of every route is registry.all_routes(); the routing (app.py),
the OpenAPI document (openapi.py) and the write lane all read it, so adding a route is one
`HttpRoute` entry in the module of its domain.

A handler is a plain function of one `RouteCall` returning a `Reply`; it blocks (the engine
does), so it runs in a worker thread, or in the write lane when `lane` says the call writes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from engine.facade import MemoryFailure, MemoryService
from gno_tui.http.access import HttpAccess


class Lane(Enum):
    """Where a call runs: a worker thread (reads, held proposals), the write lane alone, or
    the write lane in a group commit with other remember writes (gno_tui/mcp_writes.py)."""

    READ = "read"
    ALONE = "alone"
    GROUP = "group"


@dataclass(frozen=True)
class RouteCall:
    service: MemoryService
    access: HttpAccess
    session: str  # this server process's id, as the facts it writes record it
    body: Any  # the parsed JSON body (None without one)
    path: Mapping[str, str]
    query: Mapping[str, str]
    headers: Mapping[str, str]  # lowercase names

    def json_object(self, what: str = "The body") -> dict[str, Any]:
        if not isinstance(self.body, dict):
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID",
                f"{what} must be a JSON object (Content-Type: application/json), e.g. "
                '{"text": "Alice prefers tea", "scopes": ["user:alice"]}.',
            )
        return self.body


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HttpRoute:
    method: str
    path: str  # Starlette syntax: /v1/namespaces/{namespace}/records/{key:path}
    operation_id: str
    summary: str
    tag: str
    handler: Callable[[RouteCall], Reply]
    # The JSON body's schema (None: no body) and each success status's body schema.
    request_schema: dict[str, Any] | None = None
    responses: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    lane: Callable[[RouteCall], Lane] = lambda call: Lane.READ
    # Work a grouped write can do before it takes the write lock (the MCP tools' `ahead`):
    # less held under the lock, less for other writers to wait.
    ahead: Callable[[RouteCall], None] | None = None
    public: bool = False  # served without a token (health, the OpenAPI document)
    description: str = ""
    query_parameters: tuple[tuple[str, dict[str, Any], str], ...] = ()  # (name, schema, text)
    headers_in: tuple[tuple[str, str], ...] = ()  # request headers read: (name, text)
