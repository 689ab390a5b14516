"""The server mode's change feed: LISTEN on a PostgreSQL connection of its own.

Migration 0002 puts a trigger on the generation row of `store_meta` that calls
`pg_notify(CHANNEL, <new generation>)`. Every write path bumps that row in its transaction
(`bump_generation`), so every write notifies without having to remember to, and PostgreSQL
delivers the notification only when the transaction commits.

The connection is psycopg's own, not one of the SQLAlchemy pool's: a LISTEN lasts as long as
its session, and a pooled connection would be handed to other work. It is in autocommit, so
it never sits idle in a transaction. Three ways it can fail, and what covers each:

- the server ends it (restart, `pg_terminate_backend`, a failover): the socket becomes
  readable without a notification, and the probe that follows (reading the generation)
  fails; the feed connects again with a growing pause, LISTENs, and only then reads the
  generation, so a write committed while it was away is reported, and one committed after
  the read is notified;
- the network drops it silently: TCP keepalives (libpq's, for TCP connections) and a probe
  after PROBE_SECONDS without traffic find it;
- a notification it missed for any other reason: the same probe reads the counter itself.

Waiting is a `select` on the connection's socket and on one end of a socket pair, whose
other end `close` writes to: a wait ends the moment the feed is closed."""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Engine

from engine.storage.reads.change_feed import ChangeFeed
from engine.storage.server.faults import CONNECT_DEFAULTS  # libpq's timeout and keepalives

log = logging.getLogger("engine.storage")

# The channel the generation trigger notifies (migration 0002 writes the same name).
CHANNEL = "gno_tui_store_changed"
# Shown in pg_stat_activity, so a person can tell the feed's session from the writers'.
APPLICATION_NAME = "gno-tui change feed"
# Without any traffic for this long the feed reads the generation itself (which also tests
# the connection).
PROBE_SECONDS = 30.0
# Pauses between attempts to connect again: doubling from the first to the last.
RECONNECT_FIRST_SECONDS = 0.1
RECONNECT_LAST_SECONDS = 5.0
_READ_GENERATION = "SELECT value FROM store_meta WHERE name = 'generation'"


class ListenFeed(ChangeFeed):
    """Reports the generations PostgreSQL notifies on CHANNEL (see the module's text)."""

    def __init__(self, db: Engine, since: int) -> None:
        super().__init__(since)
        self._args, params = db.dialect.create_connect_args(db.url)
        self._params = {**CONNECT_DEFAULTS, **params, "application_name": APPLICATION_NAME}
        self._connection: psycopg.Connection[Any] | None = None
        self._pause = RECONNECT_FIRST_SECONDS
        self._failing = False  # connecting failed since the last success (logged once)
        self._last_traffic = 0.0
        # One waiter at a time; `close` releases the connection itself only when no wait
        # holds it (else the waiter does, on its way out).
        self._lock = threading.Lock()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self.connects = 0  # how many times the feed connected (the first time included)

    def _wait_for(self, deadline: float) -> int | None:
        with self._lock:
            try:
                return self._listen_until(deadline)
            finally:
                if self._closed.is_set():
                    self._release()

    def _listen_until(self, deadline: float) -> int | None:
        while not self._closed.is_set():
            try:
                if self._connection is None:
                    current = self._connect()
                    if current != self._reported:
                        return current
                found = self._next_notified(deadline)
                if found is None or found != self._reported:
                    return found
            except psycopg.Error as exc:
                self._lost(exc)
                pause = min(self._pause, max(0.0, deadline - time.monotonic()))
                self._pause = min(self._pause * 2, RECONNECT_LAST_SECONDS)
                if self._closed.wait(pause) or time.monotonic() >= deadline:
                    return None
        return None

    def _connect(self) -> int:
        """Connect, LISTEN, then read the generation (in that order: a write committed after
        the read is notified, one committed before it is in the value read)."""
        connection = psycopg.connect(*self._args, **self._params, autocommit=True)
        try:
            connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
            current = self._read_generation(connection)
        except BaseException:
            connection.close()
            raise
        if self._failing:
            log.warning("change feed: connected to the database again (generation %d)", current)
        self._connection = connection
        self.connects += 1
        self._failing = False
        self._pause = RECONNECT_FIRST_SECONDS
        return current

    def _read_generation(self, connection: psycopg.Connection[Any]) -> int:
        row = connection.execute(_READ_GENERATION).fetchone()
        self._last_traffic = time.monotonic()
        return int(row[0]) if row is not None else 0

    def _next_notified(self, deadline: float) -> int | None:
        """The newest generation notified, or read by a probe, before `deadline`; None at the
        deadline or on close. Raises psycopg.Error when the connection is gone."""
        connection = self._connection
        assert connection is not None
        readable = False
        while not self._closed.is_set():
            # Takes in what the socket holds (after `select` said readable) without blocking.
            notified = [n.payload for n in connection.notifies(timeout=0) if n.channel == CHANNEL]
            if notified:
                self._last_traffic = time.monotonic()
                return max(int(payload) for payload in notified)
            now = time.monotonic()
            probe_at = self._last_traffic + PROBE_SECONDS
            if readable or now >= probe_at:
                # Readable with nothing to report is most often the server ending the
                # session (its last message, then EOF), which only a query tells; a long
                # quiet is checked the same way.
                return self._read_generation(connection)
            if now >= deadline:
                return None
            ready, _, _ = select.select(
                [connection.fileno(), self._wake_reader], [], [], min(deadline, probe_at) - now
            )
            if self._wake_reader in ready:
                return None
            readable = bool(ready)
        return None

    def _lost(self, exc: psycopg.Error) -> None:
        if not self._failing:
            log.warning("change feed: no database connection (%s); connecting again", exc)
            self._failing = True
        self._disconnect()

    def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            # Closing a broken connection can fail: there is nothing left to release then.
            with contextlib.suppress(psycopg.Error):
                connection.close()

    def _release(self) -> None:
        """Closed: the connection and the wake-up sockets go."""
        self._disconnect()
        self._wake_reader.close()
        self._wake_writer.close()

    def close(self) -> None:
        """Stop, ending a wait in progress at once: its `select` wakes on the socket pair."""
        super().close()
        with contextlib.suppress(OSError):  # already released: nothing waits
            self._wake_writer.send(b"x")
        if self._lock.acquire(blocking=False):
            try:
                self._release()
            finally:
                self._lock.release()
