"""The MCP server's write lane: every write runs on one worker thread at a time, in arrival
order, and writes that arrive while another group is being applied wait and go together.

Writes serialize on the home's write lock anyway; one waiter per process keeps that (polled,
unfair) file lock shared evenly with the other processes on the home. Group commit: a run of
waiting writes that may share one (`groups`: remember's add and supersede) is applied inside
MemoryService.write_batch, one lock hold and one index transaction, and each is answered only
once that transaction is committed; any other write runs alone, as before.

No background task: the first waiting call drives the lane (takes what waits, runs it in a
worker thread, wakes the others) until its own write is done; then a call still waiting takes
over. That drive is shielded from cancellation, so a group once taken is always finished and
answered; a call cancelled before its write was taken is dropped from the queue unapplied."""

from __future__ import annotations

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
        self._driving = False
        self._round: anyio.Event | None = None  # set when the lane finishes a round

    async def run(self, call: Callable[[], Any], *, groups: bool) -> Any:
        """Apply one write (blocking `call`) in its turn; its result, or its exception."""
        write = _Write(call, groups)
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
            if not write.taken:
                self._waiting.remove(write)
            raise
        if write.error is not None:
            raise write.error
        return write.result

    async def _drive_one_round(self) -> None:
        self._driving = True
        taken, self._waiting = self._waiting[:MAX_GROUP], self._waiting[MAX_GROUP:]
        for write in taken:
            write.taken = True
        try:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._apply, taken)
        finally:
            self._driving = False
            for write in taken:
                write.done = True
            round_over, self._round = self._round, None
            if round_over is not None:
                round_over.set()

    def _apply(self, writes: list[_Write]) -> None:
        """On the worker thread: runs of writes that may share a group go as one group."""
        index = 0
        while index < len(writes):
            end = index
            while end < len(writes) and writes[end].groups:
                end += 1
            if end == index:  # a write that runs alone
                writes[index].run()
                index += 1
                continue
            group = writes[index:end]
            try:
                with self.service.write_batch():
                    for write in group:
                        write.run()
            except Exception as exc:  # noqa: BLE001 - no write of the group is acknowledged
                for write in group:
                    write.result, write.error = None, exc
            index = end
