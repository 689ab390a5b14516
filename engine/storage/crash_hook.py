"""The write paths' test-only hooks. The bulk write's crash hook:
`GNO_TUI_TEST_CRASH_BULK_WRITE=stage:count` makes the writing process SIGKILL itself at that
point of the write phase (staged:N after N files are staged, committed after the commit,
published:N once N files are in place; in the server mode, which has no files, staged:N once
the batch of rows holding the N-th is inserted in the open transaction, and committed after
its commit), so the tests can kill an import at an exact instant. The stop hook (below) stops
a group commit's writer at a named point instead. Unset, they do nothing; only tests set them."""

from __future__ import annotations

import os
import signal
import threading

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


# -- stopping a writer mid-write ---------------------------------------------------------------
# `GNO_TUI_TEST_STOP_WRITE=point` makes the process stop itself (SIGSTOP) the first time it
# reaches that point of a write, holding what it holds there (the home's write lock, an open
# index transaction), as a writer stopped by a person (kill -STOP, a debugger) or starved by
# the machine would. Its parent sees it stop (waitpid with WUNTRACED) and resumes it with
# SIGCONT. The points, in a group commit (engine/storage/group_commit.py): `group-staged`
# (the rows in the open transaction, the files under their temp names, the journal entries
# written) and `group-placed` (the files in place, just before the commit); in a person's
# review decision (engine/curation/review.py): `review-claimed` (the proposal claimed, nothing
# written yet) and `review-written` (its fact written, the proposal not yet decided), where a
# test SIGKILLs the stopped decision (engine/curation/claims.py); in a single write
# (engine/storage/store.py): `single-indexed`; opening a brand-new home: `schema-creating` (the
# write lock held, the index without tables). Only tests set it.

STOP_HOOK_ENV = "GNO_TUI_TEST_STOP_WRITE"
# Read once per process (the tests set it in the writer's environment), not at every write.
_STOP_AT = os.environ.get(STOP_HOOK_ENV)
_stopped: set[str] = set()


def stop_here(point: str) -> None:
    """Stop this process here, once, if the environment names this point."""
    if point != _STOP_AT or point in _stopped:
        return
    _stopped.add(point)
    stop = getattr(signal, "SIGSTOP", None)
    if stop is not None:
        # To this thread: it stops before its next step. Sent to the process, the signal may
        # be taken by another thread, and this one ran on (into the commit) until that one
        # had the CPU to stop them all.
        signal.pthread_kill(threading.get_ident(), stop)
