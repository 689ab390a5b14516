"""Resource subscriptions of `gno-tui mcp`: a client asks to hear when a resource it read
changes, and the server tells it `notifications/resources/updated` with the uri.

Two protocol eras, one watch:

- the handshake protocol (up to 2025-11-25): `resources/subscribe` and
  `resources/unsubscribe` per uri; the notification goes on the connection's own channel;
- the 2026-07-28 protocol: a `subscriptions/listen` request naming uris in
  `resourceSubscriptions` (the SDK's ListenHandler serves the stream: the acknowledgment
  first, then the events, until the client ends it).

What changed is decided by reading, not by guessing from the write: when the store's change
feed (`MemoryService.changes`: PostgreSQL's NOTIFY in the server mode, the counter read each
second on SQLite) reports a new generation, every subscribed uri is read again exactly as
`resources/read` would read it on this server, in its bound scopes (`--allow-scope`), and is
reported when what a client would read differs from what it read as before. Every refusal
counts as the same "unreadable" content, so a fact outside the bound scopes never changes,
and nothing about it is ever reported; a fact in them that stops being current (superseded,
retired, expired) is reported once, as the change a client would see on reading it.

The feed starts with the first subscription (a server no client subscribes to opens no
listening connection) and runs in the server's event loop as one task, each wait in a
worker thread; the server's end closes the feed, which ends that wait at once."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from engine.facade import FACT_URI, PROPOSALS_URI, MemoryFailure, MemoryService
from gno_tui.mcp_wire import first_invalid_text, text_invalid

log = logging.getLogger("gno_tui.mcp")

# At most this many distinct uris are watched per server: each is read again at every change.
MAX_WATCHED_URIS = 1000
# One wait on the change feed lasts at most this long (the server's end closes the feed, so
# this bounds nothing a person waits for).
FEED_WAIT_SECONDS = 5.0
# After the feed failed (a SQLite read error), the watch waits this long before waiting again.
FEED_RETRY_SECONDS = 5.0
# What every refused read reads as (see the module's text).
UNREADABLE = "unreadable"


class ResourceSubscriptions:
    """Who subscribed to which uri, what each uri read as, and the task that watches."""

    def __init__(self, service: MemoryService, read: Callable[[str], tuple[str, str]]) -> None:
        """`read(uri) -> (text, mime)`: the server's own read, in its bound scopes."""
        self._service = service
        self._read = read
        self._digests: dict[str, str] = {}  # uri -> what it read as when last looked at
        # Handshake-era subscribers of each uri: one per connection.
        self._sessions: dict[str, dict[object, ServerSession]] = {}
        # Open listen streams naming each uri (2026-07-28), fed through one bus.
        self._streams: dict[str, int] = {}
        self._bus = InMemorySubscriptionBus()
        self.listen = ListeningStreams(self, ListenHandler(self._bus))
        self._since: int | None = None  # the generation the first baseline was read at
        self._wanted = anyio.Event()  # set by the first subscription

    # -- the protocol handlers -------------------------------------------------------------

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = params.uri
        await self.watch([uri])
        self._sessions.setdefault(uri, {})[_connection_of(ctx)] = ctx.session
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self._drop(params.uri, _connection_of(ctx))
        return types.EmptyResult()

    # -- watching --------------------------------------------------------------------------

    async def watch(self, uris: list[str]) -> None:
        """Check each uri and read what it reads as now (before the subscription is
        answered, so a change after the answer is a change from this), unless watched."""
        new = list(dict.fromkeys(uri for uri in uris if uri not in self._digests))
        for uri in new:
            check_uri(uri)
        if len(self._digests) + len(new) > MAX_WATCHED_URIS:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"This server watches at most {MAX_WATCHED_URIS} resources; "
                "unsubscribe from some first.",
            )
        if not new:
            return
        generation, digests = await anyio.to_thread.run_sync(self._baseline, new)
        for uri, digest in digests.items():
            self._digests.setdefault(uri, digest)  # a subscribe meanwhile read it first
        if self._since is None:
            self._since = generation
        self._wanted.set()

    def _baseline(self, uris: list[str]) -> tuple[int, dict[str, str]]:
        # The generation first: a write after it is reported, and re-read, by the feed.
        generation = self._service.generation()
        return generation, self._read_digests(uris)

    def _read_digests(self, uris: list[str]) -> dict[str, str]:
        """What each uri reads as (blocking: a worker thread); a uri whose read failed
        unexpectedly is left out (logged), so it keeps what it read as before."""
        found: dict[str, str] = {}
        for uri in uris:
            try:
                text, mime = self._read(uri)
            except MemoryFailure:
                found[uri] = UNREADABLE
                continue
            except Exception:
                log.exception("re-reading the subscribed resource %s failed", uri[:300])
                continue
            found[uri] = hashlib.sha256(f"{mime}\n{text}".encode()).hexdigest()
        return found

    def _drop(self, uri: str, key: object) -> None:
        subscribers = self._sessions.get(uri, {})
        subscribers.pop(key, None)
        if not subscribers:
            self._sessions.pop(uri, None)
            self._forget(uri)

    def _forget(self, uri: str) -> None:
        if uri not in self._sessions and not self._streams.get(uri):
            self._digests.pop(uri, None)

    async def run(self) -> None:
        """The watch, as a task of the server's event loop, until it is cancelled: from the
        first subscription on, wait on the change feed and report what changed."""
        await self._wanted.wait()
        feed = await anyio.to_thread.run_sync(self._service.changes, self._since)
        try:
            while True:
                try:
                    generation = await anyio.to_thread.run_sync(
                        feed.wait, FEED_WAIT_SECONDS, abandon_on_cancel=True
                    )
                except Exception:
                    log.exception("the store's change feed failed; waiting on it again")
                    await anyio.sleep(FEED_RETRY_SECONDS)
                    continue
                if generation is not None:
                    await self.report_changes()
        finally:
            feed.close()  # ends the abandoned wait in its thread at once

    async def report_changes(self) -> None:
        """Read every watched uri again; notify the subscribers of those that changed."""
        uris = list(self._digests)
        if not uris:
            return
        digests = await anyio.to_thread.run_sync(self._read_digests, uris)
        for uri, digest in digests.items():
            if uri not in self._digests or self._digests[uri] == digest:
                continue  # unsubscribed meanwhile, or unchanged
            self._digests[uri] = digest
            for key, session in list(self._sessions.get(uri, {}).items()):
                try:
                    await session.send_resource_updated(uri)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._drop(uri, key)  # that client is gone
            if self._streams.get(uri):
                await self._bus.publish(ResourceUpdated(uri=uri))

    # -- listen streams (2026-07-28) ---------------------------------------------------------

    def stream_opened(self, uris: list[str]) -> None:
        for uri in uris:
            self._streams[uri] = self._streams.get(uri, 0) + 1

    def stream_closed(self, uris: list[str]) -> None:
        for uri in uris:
            left = self._streams.get(uri, 0) - 1
            if left > 0:
                self._streams[uri] = left
            else:
                self._streams.pop(uri, None)
                self._forget(uri)


class ListeningStreams:
    """The `subscriptions/listen` handler: the stream's uris are watched while it is open,
    and the SDK's ListenHandler serves the stream itself."""

    def __init__(self, watch: ResourceSubscriptions, handler: ListenHandler) -> None:
        self._watch = watch
        self._handler = handler

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or []))
        await self._watch.watch(uris)  # refused before the acknowledgment, if at all
        self._watch.stream_opened(uris)
        try:
            return await self._handler(ctx, params)
        finally:
            self._watch.stream_closed(uris)


def check_uri(uri: str) -> None:
    """Only this server's resources can be subscribed to: the proposals list and fact uris,
    by their shape (whether a fact exists, or lies in the bound scopes, is not told)."""
    if first_invalid_text(uri, "uri") is not None:
        failure = text_invalid("uri")
        raise MCPError(code=types.INVALID_PARAMS, message=failure.message, data=failure.to_json())
    if uri != PROPOSALS_URI and FACT_URI.fullmatch(uri) is None:
        shown = uri if len(uri) <= 300 else uri[:300] + "..."
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"{shown!r} is not a resource of this server: subscribe to {PROPOSALS_URI} "
            "or to a fact uri gno://<collection>/facts/<YYYY-MM-DD>/mem-<16 hex>.md (or "
            ".json), exactly as a recall reported it.",
        )


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> object:
    """What one client's subscriptions are kept under: its connection (each request has a
    session object of its own), or the session where the transport has none."""
    return getattr(ctx.session, "_connection", None) or ctx.session
