"""What opening an embedded home repairs, before anyone reads it: an index that holds no fact
while fact files exist is rebuilt from them, and unfinished writes and what a killed bulk write
left are settled when no process holds the write lock."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from engine.contract.errors import MemoryFailure

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine


def index_lags_files(engine: StoreEngine) -> bool:
    """The index holds no fact while a collection has fact files: answering from it would be
    answering from nothing."""
    if engine.holds_a_fact():
        return False
    return _fact_files_exist(engine)


def _fact_files_exist(engine: StoreEngine) -> bool:
    """A fact file that is not an unfinished write's (those are settled, not rebuilt: the
    first write of a new home, stopped between its file and its row, is no lagging index)."""
    unfinished = set(engine.unfinished_writes()) if engine.has_unfinished_writes() else set()
    return any(
        path.stem not in unfinished
        for row in engine.collections_by_name().values()
        for path in (Path(row.root) / "facts").glob("*/mem-*.md")
    )


def rebuild_at_open(engine: StoreEngine, why: str) -> None:
    from engine.storage.embedded.reindex import reindex_locked

    with engine.write_lock(settle=False):
        if not index_lags_files(engine):  # another process rebuilt it meanwhile
            return
        report = reindex_locked(engine, None)
    where = engine.sqlite_path.name if engine.sqlite_path else "the index database"
    found = []
    if report["forks"]:
        found.append(f"{len(report['forks'])} forked chains or keys")
    if report["duplicates"]:
        found.append(f"{len(report['duplicates'])} record ids in two files")
    if report["problems"]:
        found.append(f"{len(report['problems'])} unreadable files")
    engine.note(
        f"the index ({where}) was {why} while fact files exist: rebuilt it from "
        f"{report['files']} fact files, {report['indexed']} facts indexed"
        + (f"; found {', '.join(found)} (`gno-tui reindex --json` lists them)" if found else "")
        + "."
    )
    engine.set_open_report({key: report[key] for key in ("added", "changed", "removed")})


def repair_unless_busy(engine: StoreEngine) -> None:
    """Settle unfinished writes and what an interrupted bulk write or a crash's temp files
    left, if no process holds the write lock right now. One that holds it is a writer at work
    or one stopped mid-write (kill -STOP, a debugger): what the home holds may be its own
    write in progress, and its next hold of the lock, or the next writer's first, settles it.
    Whoever opens the home only to read answers from what is committed and must not wait for
    that writer (docs/reliability.md)."""
    from engine.storage.bulk.recovery import interrupted_writes_left, recover_interrupted_writes

    if not engine.has_unfinished_writes() and not interrupted_writes_left(engine, skip_live=True):
        return
    try:
        with engine.write_lock(timeout=0):  # its first hold settles the journal
            recover_interrupted_writes(engine)
    except MemoryFailure as failure:
        if failure.code != "MEMORY_WRITE_LEASE_BUSY":
            raise
