"""Opening a server-mode store from a process that serves for hours (`gno-tui mcp`, `gno-tui
serve`): PostgreSQL restarting just as the process starts is a wait, not an exit. A
one-shot command (the CLI's verbs) opens with open_service and fails at once, so that the
agent that ran it retries."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Unpack

from engine.contract.errors import MemoryFailure, ServerUnavailable
from engine.facade.factory import EngineOptions
from engine.facade.service import MemoryService, open_service

# The pauses between attempts: from a fraction of a second (a restart's "starting up")
# doubling to a few seconds (a server down for longer).
FIRST_PAUSE = 0.1
LONGEST_PAUSE = 3.0


def open_service_patiently(
    waiting: Callable[[MemoryFailure, float], None],
    *,
    patience: float,
    **options: Unpack[EngineOptions],
) -> MemoryService:
    """open_service, tried again for up to `patience` seconds while the database server is
    down, starting up or out of connection slots (ServerUnavailable), with
    `waiting(failure, seconds_left)` called before each pause. A refused login, a missing
    database, an embedded home's failure, or the last attempt's failure is raised as
    open_service raises it."""
    deadline = time.monotonic() + patience
    pause = FIRST_PAUSE
    while True:
        try:
            return open_service(**options)
        except ServerUnavailable as failure:
            left = deadline - time.monotonic()
            if left < pause:
                raise
            waiting(failure, left)
            time.sleep(pause)  # the backoff between two attempts to connect
            pause = min(pause * 2, LONGEST_PAUSE)
