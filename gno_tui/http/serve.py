"""Start `gno-tui serve`: check the settings, open the store once (so a store that cannot be
opened fails here, with its code, not in every worker), bind the socket, say where it
listens, and hand it to uvicorn: in this process, or to `workers` processes that each open
the store themselves (settings travel in the environment, settings.py)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.supervisors import Multiprocess

from gno_tui.http.app import create_app, open_served_store
from gno_tui.http.settings import ServeSettings

# Connection handling that keeps a slow or idle client from holding the server: idle
# keep-alive connections close after 5 s, a request's head (line and headers) must arrive
# within --body-timeout as its body must (HeadDeadline), headers are bounded, and past this
# many open connections uvicorn answers 503 instead of queueing without end.
KEEP_ALIVE_SECONDS = 5
MAX_HEADER_BYTES = 16 * 1024
MAX_CONNECTIONS = 1000


class HeadDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline for each request's head: a connection
    that opens and sends nothing, or sends part of a request line or headers and stops, is
    closed after `head_timeout` seconds. (uvicorn times only the idle wait between requests,
    so such connections would otherwise stay open for ever, and MAX_CONNECTIONS of them would
    have the server answer 503 to everyone.) The body's own deadline is the guard's."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.head_timeout: float = getattr(config, "head_timeout", 10.0)
        self.head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _watch_head(self) -> None:
        """Start the deadline when a head is awaited (once: more bytes do not extend it);
        stop it once the head has arrived."""
        if not self._waiting_for_head():
            self._stop_watching()
        elif self.head_deadline is None and not self.transport.is_closing():
            self.head_deadline = self.loop.call_later(self.head_timeout, self._head_late)

    def _stop_watching(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.cancel()
            self.head_deadline = None

    def _head_late(self) -> None:
        self.head_deadline = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Between requests uvicorn's keep-alive timer runs; the next head's bytes start a
        # new deadline (data_received).
        self._stop_watching()


def _config(app: object, settings: ServeSettings, *, factory: bool) -> uvicorn.Config:
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        factory=factory,
        http=HeadDeadline,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=10,
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        server_header=False,
    )
    # Read by HeadDeadline in every worker (the config travels to them whole).
    config.head_timeout = settings.body_timeout  # type: ignore[attr-defined]
    return config


def _listening_socket(config: uvicorn.Config) -> socket.socket:
    """The bound socket, listening already: the start line says the server listens, so a
    client that connects as soon as it reads it is queued, not refused (uvicorn's bind_socket
    only binds; its own listen comes later, once the app has started)."""
    sock = config.bind_socket()
    sock.listen(config.backlog)
    return sock


def _announce(sock: socket.socket, settings: ServeSettings, mode: str, tokens: int) -> None:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if settings.open_loopback:
        access = "OPEN on loopback: requests without a token act as http:local (--no-auth)"
    elif tokens == 0:
        access = "no live token yet: make one with `gno-tui token create NAME --scope S`"
    else:
        access = f"{tokens} live token(s)"
    sys.stderr.write(
        f"gno-tui serve: listening on http://{shown}:{port} ({mode} store, "
        f"{settings.workers} worker(s), {access}); MCP at /mcp, routes at /openapi.json\n"
    )
    sys.stderr.flush()


def run_server(settings: ServeSettings) -> int:
    settings.check()
    logging.basicConfig(level=logging.WARNING, format="gno-tui serve: %(levelname)s %(message)s")
    service = open_served_store(settings)
    mode = service.mode
    tokens = len(service.access.tokens())
    if settings.workers == 1:
        config = _config(create_app(service, settings), settings, factory=False)
        server = uvicorn.Server(config)
        sock = _listening_socket(config)
        _announce(sock, settings, mode, tokens)
        try:
            server.run(sockets=[sock])
        finally:
            service.close()
        return 0 if server.started else 1
    service.close()  # each worker opens its own
    os.environ.update(settings.to_env())
    config = _config("gno_tui.http.app:app_from_env", settings, factory=True)
    sock = _listening_socket(config)
    _announce(sock, settings, mode, tokens)
    Multiprocess(config, sockets=[sock]).run()
    return 0
