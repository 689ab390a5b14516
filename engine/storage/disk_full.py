"""A full disk, said as such (docs/contract.md section 10).

A write that runs out of space fails deep down: an OSError with errno ENOSPC (or EDQUOT, a
quota) from a file, SQLite's SQLITE_FULL ("database or disk is full") from the index, often
wrapped by SQLAlchemy or followed by a second error while the failed transaction is rolled back,
or PostgreSQL's disk_full (SQLSTATE 53100). Shown as it came, that was `MEMORY_INTERNAL
OSError: [Errno 28] ...`. Here it becomes `MEMORY_SYNC_FAILED` (the store failed, not the
input; exit 2) with a message that says the disk is full, which disk, how much is free, and
what to do. The writes themselves take care that nothing is left half done (an import rolls
back; reindex's changes are one transaction)."""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.contract.errors import MemoryFailure

_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
_POSTGRES_DISK_FULL = "53100"
# An SQLite I/O error (making its shared-memory file, say) on a filesystem with less than
# this free is taken for a full disk: SQLite does not pass on the errno.
LOW_SPACE_BYTES = 1 << 20
# What a write refused for a full disk says became of it: nothing (refused before it wrote),
# or, once it may have written part, that the next write settles that part (the home's
# journal finishes or leaves out a fact file cut short; a decision's claim is recovered).
NOT_STORED = "This change was not stored; free some space there, then try again"
CUT_SHORT = (
    "Free some space there, then try again: what this change wrote before the disk filled up, "
    "if anything, is settled by the next write and never stored twice"
)


def free_bytes(path: Path) -> int | None:
    """Space free for this user on the filesystem holding `path` (or its nearest existing
    folder); None where that cannot be told."""
    for folder in (path, *path.parents):
        try:
            stat = os.statvfs(folder)
        except (OSError, AttributeError):  # not there, or no statvfs (Windows)
            continue
        return stat.f_bavail * stat.f_frsize
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and every error behind it: causes, contexts, and a driver's own (`orig`)."""
    found: list[BaseException] = []
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or any(current is seen for seen in found):
            continue
        found.append(current)
        orig = getattr(current, "orig", None)
        stack.extend([current.__cause__, current.__context__])
        if isinstance(orig, BaseException):
            stack.append(orig)
    return found


def disk_full_cause(exc: BaseException, where: Path) -> BaseException | None:
    """The error in `exc`'s chain that says the disk is full, if any; `where` is the folder
    the failed write was writing to (for an SQLite I/O error, which names no errno)."""
    chain = _chain(exc)
    for error in chain:
        if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
            return error
        if isinstance(error, sqlite3.Error):
            code = getattr(error, "sqlite_errorcode", None)
            if (code is not None and code & 0xFF == sqlite3.SQLITE_FULL) or (
                "database or disk is full" in str(error)
            ):
                return error
        if getattr(error, "sqlstate", None) == _POSTGRES_DISK_FULL:
            return error
    for error in chain:
        code = getattr(error, "sqlite_errorcode", None)
        if (
            isinstance(error, sqlite3.Error)
            and code is not None
            and code & 0xFF == sqlite3.SQLITE_IOERR
        ):
            free = free_bytes(where)
            if free is not None and free < LOW_SPACE_BYTES:
                return error
    return None


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1 << 20:
        return f"{count / 1024:.0f} KiB"
    return f"{count / (1 << 20):.1f} MiB"


class DiskFull(MemoryFailure):
    """`MEMORY_SYNC_FAILED` for a full disk, as disk_full_refusal words it."""

    def __init__(self, message: str) -> None:
        super().__init__("MEMORY_SYNC_FAILED", message)


def disk_full_refusal(
    exc: BaseException, where: Path, outcome: str, *, reword: bool = False
) -> MemoryFailure | None:
    """`MEMORY_SYNC_FAILED` saying the disk is full, if that is what `exc` comes from (None
    otherwise, and for an error that has its code already). `where` is the folder written to
    (the file a failed write names is preferred); `outcome` says what became of the write and
    what to do, e.g. "Nothing was imported; free some space there, then run the import again".
    `reword`: a caller that knows the whole command's outcome (reindex, import, opening a
    home) says it instead of what a write inside it said (the write lock's general words)."""
    if isinstance(exc, MemoryFailure) and not (reword and isinstance(exc, DiskFull)):
        return None
    cause = disk_full_cause(exc, where)
    if cause is None:
        return None
    if getattr(cause, "sqlstate", None) == _POSTGRES_DISK_FULL:
        return DiskFull(
            f"The database server's disk is full ({str(cause).strip().splitlines()[0]}). {outcome}."
        )
    place = _existing(_named_file(cause) or where)
    free = free_bytes(place)
    left = f" ({_size(free)} free now)" if free is not None else ""
    return DiskFull(
        f"The disk is full: the write ran out of space on the filesystem that holds {place}"
        f"{left}. {outcome}."
    )


def _named_file(cause: BaseException) -> Path | None:
    """The absolute path an OSError names (a relative one was opened inside a folder)."""
    filename = getattr(cause, "filename", None)
    if not isinstance(filename, (str, bytes)):
        return None
    path = Path(os.fsdecode(filename))
    return path if path.is_absolute() else None


def _existing(path: Path) -> Path:
    """`path`, or its nearest folder that still exists (a failed write's staging is gone)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return path


@contextmanager
def disk_full_said(where: Path, outcome: str, *, reword: bool = False) -> Iterator[None]:
    """Inside the block, an error that comes from a full disk is raised as disk_full_refusal
    says it (with `reword`, also one said already); any other passes unchanged."""
    try:
        yield
    except Exception as exc:
        refusal = disk_full_refusal(exc, where, outcome, reword=reword)
        if refusal is None:
            raise
        raise refusal from exc
