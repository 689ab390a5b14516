"""The door of `gno-tui serve`: every HTTP request passes here before any route or /mcp.

In order: the Host (and, when sent, the Origin) must be one the server serves (a loopback
server serves only loopback names, so a web page cannot reach it through DNS rebinding); then
the bearer token must be live (401 otherwise), and its grant goes into the ASGI scope as an
`HttpAccess` for the routes and the MCP tools; then the body is read whole, at most
`max_body` bytes (413) within `body_timeout` seconds (408), before the application sees it.
A slow or oversized client is refused without holding the store or a worker thread."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.facade import MemoryFailure, MemoryService
from gno_tui.http.access import SCOPE_KEY, HttpAccess
from gno_tui.http.errors import error_response
from gno_tui.http.settings import ServeSettings, host_name


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        service: MemoryService,
        settings: ServeSettings,
        public_paths: frozenset[str],
    ) -> None:
        self.app = app
        self.service = service
        self.settings = settings
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_host_and_origin(scope)
            if scope["path"] not in self.public_paths:
                scope[SCOPE_KEY] = await self._authenticate(scope)
            body = await self._read_body(scope, receive)
        except MemoryFailure as failure:
            await error_response(failure)(scope, receive, send)
            return
        except _ClientGone:
            return
        await self.app(scope, _replay(body, receive), send)

    # -- Host and Origin ----------------------------------------------------------------

    def _check_host_and_origin(self, scope: Scope) -> None:
        headers = _headers(scope)
        host = host_name(headers.get("host", ""))
        if not self.settings.host_allowed(host):
            raise MemoryFailure(
                "MEMORY_ORIGIN_FORBIDDEN",
                f"This server does not serve the host {host[:80]!r}. Reach it by the address "
                "it listens on; its operator can allow more names with `serve --allow-host`.",
            )
        origin = headers.get("origin")
        if origin is not None and not self.settings.origin_allowed(origin):
            raise MemoryFailure(
                "MEMORY_ORIGIN_FORBIDDEN",
                f"Requests from the web origin {origin[:80]!r} are refused. Call the server "
                "from an agent or a script; its operator can allow an origin with "
                "`serve --allow-origin`.",
            )

    # -- the token ----------------------------------------------------------------------

    async def _authenticate(self, scope: Scope) -> HttpAccess:
        try:
            return await self._access(scope)
        except MemoryFailure:
            raise
        except Exception as exc:  # the store could not be read: a coded 503, not a traceback
            raise MemoryFailure(
                "MEMORY_QUERY_FAILED",
                f"The token could not be checked ({type(exc).__name__}): the store is not "
                "reachable. Retry shortly; if it persists, tell the person running the server.",
            ) from exc

    async def _access(self, scope: Scope) -> HttpAccess:
        headers = _headers(scope)
        scheme, _, token = headers.get("authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            forwarded = any(name in headers for name in FORWARDING_HEADERS)
            if self.settings.open_loopback and not forwarded:
                return HttpAccess.open_loopback(can_write=self.settings.open_write)
            raise MemoryFailure(
                "MEMORY_AUTH_REQUIRED",
                "This server needs a token: send `Authorization: Bearer <token>`. A person "
                "makes one with `gno-tui token create NAME --scope SCOPE`.",
            )
        access = self.service.access
        grant = access.cached_grant(token) or await anyio.to_thread.run_sync(
            access.verify_token, token
        )
        if grant is None:
            raise MemoryFailure(
                "MEMORY_AUTH_REQUIRED",
                "The token is unknown or revoked. Ask the person running gno-tui for a live "
                "one (`gno-tui token list` shows them).",
            )
        return HttpAccess.of_grant(grant)

    # -- the body -----------------------------------------------------------------------

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.settings.max_body
        declared = _headers(scope).get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise _too_large(limit)
        if scope["method"] in ("GET", "HEAD", "DELETE", "OPTIONS") and declared is None:
            return b""
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(self.settings.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _ClientGone
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        raise _too_large(limit)
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            raise MemoryFailure(
                "MEMORY_REQUEST_TIMEOUT",
                f"The request's body did not arrive within {self.settings.body_timeout:g} s. "
                "Send it at once.",
            ) from None
        return b"".join(chunks)


# A request relayed by a proxy carries one of these: it may come from anywhere, so an open
# (--no-auth) loopback server asks it for a token all the same.
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip")


class _ClientGone(Exception):
    """The client closed the connection before its body arrived: nothing to answer."""


def _too_large(limit: int) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_REQUEST_TOO_LARGE",
        f"The request's body is over {limit} bytes. A fact's text is at most 4 KiB and a keyed "
        "memory's content 16 KiB: send less.",
    )


def _headers(scope: Scope) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in scope.get("headers", [])
    }


def _replay(body: bytes, receive: Receive) -> Callable[[], Awaitable[Message]]:
    """A receive that gives the body read already, then the connection's own messages (a
    disconnect, for a streaming response)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
