"""Every HTTP route of `gno-tui serve`, in one table: the ROUTES of each domain's module."""

from __future__ import annotations

from gno_tui.http import (
    gno_routes,
    keyed_routes,
    ob1_review_routes,
    ob1_routes,
    ob1_writeback_routes,
    system_routes,
)
from gno_tui.http.routes import HttpRoute


def all_routes() -> tuple[HttpRoute, ...]:
    routes = (
        *system_routes.ROUTES,
        *gno_routes.ROUTES,
        *ob1_routes.ROUTES,
        *ob1_writeback_routes.ROUTES,
        *ob1_review_routes.ROUTES,
        *keyed_routes.ROUTES,
    )
    seen = {(route.method, route.path) for route in routes}
    if len(seen) != len(routes) or len({r.operation_id for r in routes}) != len(routes):
        raise ValueError("two HTTP routes share a method and path, or an operation id")
    return routes
