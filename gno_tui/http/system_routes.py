"""The server's own route: health, served without a token. (/openapi.json is app.py's:
the document is made from the whole table, openapi.py.)"""

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
    return Reply(200, {"status": "ok", "version": __version__, "mode": call.service.mode})


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
)
