"""The MCP server's write lane: every write runs on one worker thread at a time, in arrival
order, and writes that arrive while another group is being applied wait and go together.

Writes serialize on the home's write lock anyway; one waiter per process keeps that file lock
shared evenly with the other processes on the home. Group commit: a run of waiting writes that
may share one (`groups`: remember's add and supersede) is applied inside
MemoryService.write_batch, one lock hold and one index transaction, and each is answered only
once that transaction is committed; any other write runs alone, as before. The group is taken
once the lock is held, not before: the writes that arrived while this process waited for
another's group join it (taken earlier, the first write of a burst went alone, and every
group of one paid a whole hand-off of the lock between processes).

No background task: the first waiting call drives the lane (takes what waits, runs it in a
worker thread, wakes the others) until its own write is done; then a call still waiting takes
over. That drive is shielded from cancellation, so a group once taken is always finished and
answered; a call cancelled before its write was taken is dropped from the queue unapplied."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from engine.facade import MemoryService

# Writes applied in one group at most: bounds how long a group holds the lock and its open
# transaction (a recall's receipt waits on it) and how long its first write waits.
MAX_GROUP = 32


@dataclass
class _Write:
    call: Callable[[], Any]
    groups: bool
    ahead: Callable[[], None] | None = None  # what it can do before the lock (Tool.ahead)
    done: bool = False
    result: Any = None
    error: BaseException | None = None
    taken: bool = field(default=False)

    def run(self) -> None:
        try:
            self.result = self.call()
        except Exception as exc:  # noqa: BLE001 - handed to the caller's own task
            self.error = exc


class WriteLane:
    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self._waiting: list[_Write] = []
        # The queue is taken from by the worker thread (once it holds the store's lock) and
        # added to by the event loop: a thread lock, held for list operations only, guards
        # it. (Asking the event loop for it instead cost the worker a GIL hand-off, up to
        # the 5 ms switch interval while the loop was busy, and so shrank the groups.)
        self._queue_guard = threading.Lock()
        self._driving = False
        self._round: anyio.Event | None = None  # set when the lane finishes a round

    async def run(
        self, call: Callable[[], Any], *, groups: bool, ahead: Callable[[], None] | None = None
    ) -> Any:
        """Apply one write (blocking `call`) in its turn; its result, or its exception.
        `ahead`: work it can do before the write lock (best effort, on the lane's thread)."""
        write = _Write(call, groups, ahead)
        with self._queue_guard:
            self._waiting.append(write)
        try:
            while not write.done:
                if self._driving:
                    if self._round is None:
                        self._round = anyio.Event()
                    await self._round.wait()
                    continue
                await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled call drives no more
                await self._drive_one_round()
        except anyio.get_cancelled_exc_class():
            with self._queue_guard:
                if not write.taken:
                    self._waiting.remove(write)
            raise
        if write.error is not None:
            raise write.error
        return write.result

    async def _drive_one_round(self) -> None:
        self._driving = True
        taken: list[_Write] = []
        try:
            with anyio.CancelScope(shield=True):
                with self._queue_guard:
                    alone = None if self._waiting[0].groups else self._take_one()
                if alone is None:
                    await anyio.to_thread.run_sync(self._apply_group, taken)
                else:  # a write that runs alone
                    taken.append(alone)
                    await anyio.to_thread.run_sync(alone.run)
        finally:
            self._driving = False
            for write in taken:
                write.done = True
            round_over, self._round = self._round, None
            if round_over is not None:
                round_over.set()

    def _take_one(self) -> _Write:
        """The first waiting write (the caller holds the queue guard)."""
        write = self._waiting.pop(0)
        write.taken = True
        return write

    def _take_group(self) -> list[_Write]:
        """The waiting writes that may share a group, from the front (at most MAX_GROUP)."""
        group: list[_Write] = []
        with self._queue_guard:
            while self._waiting and self._waiting[0].groups and len(group) < MAX_GROUP:
                group.append(self._take_one())
        return group

    def _work_ahead(self) -> None:
        """Before the lock: the `ahead` work of the writes waiting to be grouped now (a write
        that comes during the wait for the lock does its work inside, as without it)."""
        with self._queue_guard:
            waiting = [write for write in self._waiting[:MAX_GROUP] if write.groups]
        for write in waiting:
            ahead, write.ahead = write.ahead, None
            if ahead is not None:
                try:
                    ahead()
                except Exception:  # noqa: BLE001 - the write does it again, and says why
                    continue

    def _apply_group(self, taken: list[_Write]) -> None:
        """On the worker thread: hold the lock, then take the group (the writes waiting now,
        those that came during the wait for the lock included) and apply it. `taken` is
        filled as the group is taken, so that its writes are answered whatever happens."""
        self._work_ahead()
        try:
            with self.service.write_batch() as batch:
                taken += self._take_group()
                batch.expect(len(taken))
                for write in taken:
                    write.run()
        except Exception as exc:  # noqa: BLE001 - no write of the group is acknowledged
            if not taken:  # the lock was not had: the writes that waited for it are refused
                taken += self._take_group()
            for write in taken:
                write.result, write.error = None, exc
