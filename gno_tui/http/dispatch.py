"""One HTTP route as a Starlette endpoint: parse the body, build the call, run the handler in
a worker thread or the write lane, answer its reply or its error. Every failure becomes
{"error": {"code", "message"}} with the code's status; nothing unexpected leaks a traceback."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from engine.facade import MemoryFailure, check_json_depth
from gno_tui.http.access import SCOPE_KEY, HttpAccess
from gno_tui.http.errors import error_response
from gno_tui.http.routes import HttpRoute, Lane, Reply, RouteCall
from gno_tui.mcp_wire import first_invalid_text, summary, text_invalid
from gno_tui.mcp_writes import WriteLane

log = logging.getLogger("gno_tui.http")


def _refuse_constant(name: str) -> Any:
    raise MemoryFailure(
        "MEMORY_USAGE_INVALID", f"The body holds {name}, which is not JSON: send a number."
    )


def parse_body(raw: bytes) -> Any:
    """The JSON body (None when empty): UTF-8 only, no NaN or Infinity, no lone surrogates."""
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MemoryFailure(
            "MEMORY_TEXT_INVALID",
            "The body is not UTF-8 text. Send JSON encoded as UTF-8.",
        ) from None
    try:
        body = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"The body is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}). "
            "Send one JSON object with Content-Type: application/json.",
        ) from None
    except RecursionError:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID", "The body nests too deep to be a request: flatten it."
        ) from None
    check_json_depth(body, what="The body", code="MEMORY_USAGE_INVALID")
    if (where := first_invalid_text(body, "body")) is not None:
        raise text_invalid(where)
    return body


def endpoint(
    route: HttpRoute, *, service: Any, session: str, writes: WriteLane
) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        try:
            access: HttpAccess | None = request.scope.get(SCOPE_KEY)
            if access is None and not route.public:
                raise MemoryFailure("MEMORY_AUTH_REQUIRED", "No access was established.")
            body = parse_body(await request.body()) if route.request_schema else None
            call = RouteCall(
                service=service,
                access=access or HttpAccess.anonymous(),
                session=session,
                body=body,
                path=dict(request.path_params),
                query=dict(request.query_params),
                headers={k.lower(): v for k, v in request.headers.items()},
            )
            for part, values in (("path", call.path), ("query", call.query)):
                if (where := first_invalid_text(dict(values), part)) is not None:
                    raise text_invalid(where)
            lane = route.lane(call)
            reply: Reply
            if lane is Lane.READ:
                reply = await anyio.to_thread.run_sync(route.handler, call)
            else:
                run = functools.partial(route.handler, call)
                ahead = None if route.ahead is None else functools.partial(route.ahead, call)
                reply = await writes.run(run, groups=lane is Lane.GROUP, ahead=ahead)
        except MemoryFailure as failure:
            return error_response(failure)
        except Exception as exc:
            log.exception("%s %s failed unexpectedly", route.method, route.path)
            return error_response(
                MemoryFailure(
                    "MEMORY_INTERNAL",
                    f"{route.method} {route.path} failed inside gno-tui ({summary(exc)}). "
                    "Retry once; if it persists, tell the person running the server (its log "
                    "has the details).",
                )
            )
        if reply.status == 204:  # no content: no body at all, not JSON null
            return Response(status_code=204, headers=dict(reply.headers))
        return JSONResponse(reply.body, status_code=reply.status, headers=dict(reply.headers))

    return handle
