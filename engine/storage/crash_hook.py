"""The bulk write's test-only crash hook: `GNO_TUI_TEST_CRASH_BULK_WRITE=stage:count` makes the
writing process SIGKILL itself at that point of the write phase (staged:N after N files are
staged, committed after the commit, published:N once N files are in place; in the server
mode, which has no files, staged:N once the batch of rows holding the N-th is inserted in the
open transaction, and committed after its commit), so the tests can kill an import at an
exact instant. Unset, it does nothing; only tests set it."""

from __future__ import annotations

import os
import signal

CRASH_HOOK_ENV = "GNO_TUI_TEST_CRASH_BULK_WRITE"

CrashPoint = tuple[str, int] | None


def crash_points() -> CrashPoint:
    """The point named by the environment, if any."""
    spec = os.environ.get(CRASH_HOOK_ENV)
    if not spec:
        return None
    stage, _, count = spec.partition(":")
    try:
        return stage, int(count or 0)
    except ValueError:
        return None


def crash_at(point: CrashPoint, stage: str, count: int = 0) -> None:
    """Die here if this is the named point."""
    if point is not None and point == (stage, count):
        kill = getattr(signal, "SIGKILL", None)
        if kill is not None:
            os.kill(os.getpid(), kill)
        os._exit(137)


def crash_within(point: CrashPoint, stage: str, after: int, upto: int) -> None:
    """The hook of a step that reaches counts after+1 to upto at once (a folder renamed whole)."""
    if point is not None and point[0] == stage and after < point[1] <= upto:
        crash_at(point, stage, point[1])
