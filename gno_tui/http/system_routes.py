"""The server's own routes: health and the OpenAPI document (served without a token)."""

from __future__ import annotations

from gno_tui import __version__
from gno_tui.http.routes import HttpRoute, Reply, RouteCall

HEALTH_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["status", "version", "mode"],
    "properties": {
        "status": {"const": "ok"},
        "version": {"type": "string"},
        "mode": {"enum": ["embedded", "server"]},
    },
}


def health(call: RouteCall) -> Reply:
    mode = "embedded" if call.service.files_canonical else "server"
    return Reply(200, {"status": "ok", "version": __version__, "mode": mode})


def openapi(call: RouteCall) -> Reply:
    from gno_tui.http.openapi import document

    return Reply(200, document())


ROUTES: tuple[HttpRoute, ...] = (
    HttpRoute(
        method="GET",
        path="/healthz",
        operation_id="health",
        summary="Is the server up",
        tag="server",
        handler=health,
        responses={200: HEALTH_SCHEMA},
        public=True,
    ),
    HttpRoute(
        method="GET",
        path="/openapi.json",
        operation_id="openapi",
        summary="This document: every REST route",
        tag="server",
        handler=openapi,
        responses={200: {"type": "object"}},
        public=True,
    ),
)
