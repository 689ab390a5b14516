"""The store's change feed: what a surface that shows the store (the workbench, the MCP
server's resource subscriptions) waits on to learn that some process wrote.

Every write moves the generation counter (`store_meta`, `bump_generation`) inside its own
transaction, so "the store changed" is "the generation moved". How a feed learns it depends
on the database, behind one interface (`ChangeFeed.wait`):

- PostgreSQL (the server mode): the database tells it. A trigger on the generation row calls
  `pg_notify` (migration 0002), and `ListenFeed` (engine/storage/server/listen.py) LISTENs on a
  connection of its own. NOTIFY is delivered at commit, so a feed never reports a write that
  could still roll back, and while nothing is written a feed asks the database nothing (but
  for one probe after half a minute of quiet).
- SQLite (the embedded mode): SQLite has no way to tell one process that another committed,
  so `PollingFeed` reads the one-row counter every `SQLITE_POLL_SECONDS` (a read of a local
  file, well under a millisecond).

`MemoryService.changes` (engine/facade/service.py) picks the feed for the engine's database.
A feed reports generations, not changes: a burst of writes may be reported once, as its last
generation. It is meant for one thread to wait on; `close` may come from any thread and ends
a wait in progress at once, which is what lets a workbench quit without waiting out a
timeout."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType

# How often the SQLite feed reads the counter: as often as the workbench polled it before.
SQLITE_POLL_SECONDS = 1.0


class ChangeFeed(ABC):
    """Waits for the store's generation to move past the last one it reported."""

    def __init__(self, since: int) -> None:
        self._reported = since
        self._closed = threading.Event()

    @property
    def generation(self) -> int:
        """The generation last reported (or the one the feed started from)."""
        return self._reported

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def wait(self, timeout: float) -> int | None:
        """Block up to `timeout` seconds for the store to change: the new generation, or None
        when nothing changed in that time or the feed was closed. A change made before this
        call and after the last report (or `since`) is reported at once."""
        if self._closed.is_set():
            return None
        found = self._wait_for(time.monotonic() + max(0.0, timeout))
        if found is None or found == self._reported or self._closed.is_set():
            return None
        self._reported = found
        return found

    def close(self) -> None:
        """Stop: a wait in progress returns None at once, later ones at once too."""
        self._closed.set()

    @abstractmethod
    def _wait_for(self, deadline: float) -> int | None:
        """The current generation once it differs from `self._reported`, or None at the
        deadline (time.monotonic()) or on close."""

    def __enter__(self) -> ChangeFeed:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


class PollingFeed(ChangeFeed):
    """SQLite's feed: the counter read every `interval` seconds (no cross-process
    notification exists), the sleep in between cut short by `close`."""

    def __init__(
        self, read_generation: Callable[[], int], since: int, interval: float | None = None
    ) -> None:
        super().__init__(since)
        self._read = read_generation
        self._interval = SQLITE_POLL_SECONDS if interval is None else interval
        self._next_read = 0.0  # the first wait reads at once

    def _wait_for(self, deadline: float) -> int | None:
        while not self._closed.is_set():
            now = time.monotonic()
            if now >= self._next_read:
                self._next_read = now + self._interval
                current = self._read()
                if current != self._reported:
                    return current
            if now >= deadline:
                return None
            self._closed.wait(max(0.0, min(self._next_read, deadline) - time.monotonic()))
        return None
