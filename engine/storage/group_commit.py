"""Group commit: writes that wait together are applied in one hold of the write lock and one
index transaction, and each is answered only once that transaction is committed and its fact
file is durable.

A server that receives several writes at once (an MCP server with calls in flight) runs them
inside `write_batch`: each write is the ordinary remember path (its own checks, journal entry
and fact file), but its rows go into the group's transaction (a savepoint of it when the group
holds more than one write) instead of a transaction of their own, its fact file is staged
(written under its temp name, its fsync started at once in a worker thread, so that the disk
works while the group goes on), and its journal entry stays until the group's commit. Before
the commit the files are renamed into place; after it the lock is let go, and only then is
every staged file's fsync awaited, so each write is durable, file and row, before any is
answered, while the next writer of the home already runs. (Waiting for the disk under the
lock made every other writer wait for it too: four processes that each wait for their
answers wrote a fifth less.) So:

- one lock hand-off, one generation bump, one wait for the disk and one commit for the group
  instead of one each;
- a write that fails (a lost supersede race, a refused row) rolls back its own savepoint only;
- the group's later writes see its earlier ones (the exact check, a supersede of a fact added
  in the same group), because they read through the group's session;
- a crash before the commit leaves journalled files without rows (or temp files, never in
  place), which the next write lock settles exactly as a single write killed between its file
  and its row or inside its file's write (none of them had been acknowledged); a kill after
  the commit, while the disk flushes, loses nothing either: the files' data was written, and
  the kernel keeps it for a killed process (only a power loss in that instant could lose a
  file, of a write not yet answered); if the commit itself fails, every write of the group
  answers `sync: failed` (its file is written and journalled, indexed by the next write), as
  one write whose index write failed does; if the files cannot be put in place, nothing of
  the group is stored and every write of it fails with MEMORY_SYNC_FAILED, as one write whose
  file cannot be written does; a file whose fsync fails is stored, and its write answers
  `sync: failed` with the reason. In the server mode there is no file to stand for them: a
  failed commit fails every write of the group (none was acknowledged)."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import parse_iso
from engine.storage.crash_hook import stop_here
from engine.storage.embedded.factfiles import TEMP_PREFIX
from engine.storage.embedded.sqlite_driver import DriverStatements
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from engine.storage.mode import StoreEngine

log = logging.getLogger("engine.storage")

# -- the group's fact files -------------------------------------------------------------


@dataclass
class StagedFile:
    """A file written to its temp name beside `path`, not yet in place: the first half of
    `write_atomically`, for a group of writes (`put_in_place` puts them in place). Its fsync
    runs from the moment it is written, in a worker thread (`syncing`), so that the disk's
    flush overlaps the rest of the group's work instead of following it."""

    path: Path
    temp: Path
    syncing: Future[None]


def stage_file(path: Path, content: str) -> StagedFile:
    """Write `content` to a temp file beside `path` and start its fsync; `put_in_place` puts
    it in place, `durability_errors` waits for the fsync, `discard_staged` takes it back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".md", dir=path.parent)
    try:
        data = content.encode("utf-8")
        written = 0
        while written < len(data):
            written += os.write(descriptor, data[written:])
        syncing = _pool().submit(_fsync_and_close, descriptor)
    except BaseException:
        os.close(descriptor)
        Path(temp_name).unlink(missing_ok=True)
        raise
    return StagedFile(path, Path(temp_name), syncing)


# Staged files' fsyncs, several at once: the filesystem's journal commits several files'
# metadata in one go (eight small files synced together took 0.9 ms on ext4 here, one after
# another 2.3 ms).
_SYNC_WORKERS = 8
_sync_pool: ThreadPoolExecutor | None = None
_sync_pool_made = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _sync_pool
    with _sync_pool_made:
        if _sync_pool is None:
            from concurrent.futures import ThreadPoolExecutor  # only a server's groups use it

            _sync_pool = ThreadPoolExecutor(_SYNC_WORKERS, thread_name_prefix="gno-fsync")
        return _sync_pool


def _fsync_and_close(descriptor: int) -> None:
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def put_in_place(files: list[StagedFile]) -> None:
    """Rename every staged file into place, their fsyncs still running (`durability_errors`
    awaits them): the data is written, so a reader, or the next process after a kill, sees
    the whole file. On an error nothing is in place and every temp file is gone (the error
    is raised)."""
    placed: list[StagedFile] = []
    try:
        for staged in files:
            staged.temp.replace(staged.path)
            placed.append(staged)
    except BaseException:
        for staged in placed:
            staged.path.unlink(missing_ok=True)
        discard_staged(files)
        raise


def durability_errors(files: list[StagedFile]) -> list[BaseException | None]:
    """Wait for every staged file's fsync; per file, its error or None."""
    return [staged.syncing.exception() for staged in files]


def discard_staged(files: list[StagedFile]) -> None:
    """Take staged files back: their temp files go (a file already in place stays)."""
    for staged in files:
        staged.syncing.exception()  # its descriptor is closed once its fsync has ended
        staged.temp.unlink(missing_ok=True)


# -- the group -----------------------------------------------------------------------------

_COMMIT_FAILED = (
    "The group of writes this one belonged to could not be committed to the index ({error}). "
    "The fact file is written and its write stays journalled: the next write to this home "
    "indexes it first, or run `gno-tui reindex` to bring the index in line now."
)


_NOT_DURABLE = (
    "The fact is stored, but the disk did not confirm its file was flushed ({error}): it "
    "may not survive a power loss. Check the disk; if the fact is missing after a restart, "
    "write it again."
)


_FILES_FAILED = (
    "Could not write the fact files of this group of writes ({error}). Check that the home "
    "folder is writable and has space; nothing of these writes was stored."
)


class WriteBatch:
    """One open group: its session, the collections (stable while the write lock is held:
    changing one takes it), the fact files staged and the writes whose journal entries wait
    for the commit."""

    def __init__(
        self,
        session: Session,
        collections: dict[str, tables.CollectionRow],
        statements: DriverStatements | None,
    ) -> None:
        self.session = session
        self.collections = collections
        self.statements = statements  # the writes' statements on SQLite's driver
        self._written: list[tuple[str, dict[str, Any]]] = []
        self._staged: list[StagedFile] = []
        self._staged_ids: list[str] = []
        # The group holds one write: its rows need no savepoint of their own (a failure rolls
        # back the group's transaction, which holds nothing else). Two statements less.
        self.sole = False

    def expect(self, writes: int) -> None:
        """How many writes the group holds, once taken (before the first runs)."""
        self.sole = writes == 1

    def stage(self, record_id: str, path: Path, content: str) -> None:
        self._staged.append(stage_file(path, content))
        self._staged_ids.append(record_id)

    def take_back(self, path: Path) -> bool:
        """Drop a staged file (a write that lost its race); False if none is staged there."""
        for index, staged in enumerate(self._staged):
            if staged.path == path:
                discard_staged([staged])
                del self._staged[index], self._staged_ids[index]
                return True
        return False

    def written(self, record_id: str, sync: dict[str, Any]) -> None:
        self._written.append((record_id, sync))

    def abandon(self, engine: StoreEngine) -> None:
        """The group failed before its end: no file goes in place, no journal entry stays."""
        self.session.rollback()
        discard_staged(self._staged)
        for record_id in self._staged_ids:
            engine.end_write(record_id)

    def settle(self, engine: StoreEngine) -> None:
        """The files in place, then the commit; then the journal entries go (under the lock;
        `await_files` follows once it is released). A failed commit marks every write failed;
        files that cannot be put in place fail the group (MEMORY_SYNC_FAILED), nothing of it
        stored. A group none of whose writes reached the index (each refused, answered
        `existing` or lost its race) commits nothing: the generation it moved at its start
        goes back, so that no reader refreshes for it."""
        if not self._written and not self._staged:
            self.session.rollback()
            return
        stop_here("group-staged")  # tests only (engine/storage/crash_hook.py)
        try:
            put_in_place(self._staged)
        except OSError as exc:
            log.warning(
                "gno-tui: the files of a group of %d writes failed: %s", len(self._staged), exc
            )
            self._staged = []  # put_in_place took them all back
            self.abandon(engine)
            raise MemoryFailure("MEMORY_SYNC_FAILED", _FILES_FAILED.format(error=exc)) from exc
        stop_here("group-placed")
        try:
            self.session.commit()
        except Exception as exc:  # noqa: BLE001 - where files stand, indexed later; else raised
            log.warning("gno-tui: a group commit of %d writes failed: %s", len(self._written), exc)
            self.session.rollback()
            engine.fact_sink.commit_failed(exc)  # raises when no file stands for the writes
            for _, sync in self._written:
                sync.clear()
                sync.update(status="failed", error=_COMMIT_FAILED.format(error=exc))
            return
        for record_id, _ in self._written:
            engine.end_write(record_id)

    def await_files(self) -> None:
        """After the lock is let go: every file of the group durable before any write of it
        is answered. The disk's flush no longer holds up the home's other writers, only
        these answers. A file whose fsync failed is stored (row and file) but may not
        survive a power loss or a failing disk: its write answers `sync: failed`, saying so."""
        syncs = dict(self._written)
        for record_id, error in zip(self._staged_ids, durability_errors(self._staged), strict=True):
            sync = syncs.get(record_id)
            if error is None or sync is None:
                continue
            log.warning("gno-tui: the fact file of %s could not be flushed: %s", record_id, error)
            if sync.get("status") == "completed":
                sync.clear()
                sync.update(status="failed", error=_NOT_DURABLE.format(error=error))


@contextmanager
def write_batch(engine: StoreEngine) -> Iterator[WriteBatch]:
    """Hold the write lock and one index transaction for the writes run inside (on this
    thread); commit when the block ends. Write paths that know nothing of groups (anything
    but remember's add and supersede) must not run inside: they would wait on the group's
    open transaction from a session of their own."""
    with engine.write_lock():
        with Session(engine.db, expire_on_commit=False) as session:
            # A write first, so the transaction is open before any savepoint: SQLite's driver
            # would otherwise let the first savepoint's release commit on its own.
            statements = DriverStatements.for_session(session)
            bump_generation(session, statements)
            session.flush()
            batch = WriteBatch(session, _collections(engine, session, statements), statements)
            engine.bind_batch(batch)
            try:
                yield batch
            except BaseException:
                batch.abandon(engine)
                raise
            finally:
                engine.bind_batch(None)
            batch.settle(engine)
    batch.await_files()  # the lock is free for the next writer while the disk flushes


# The collections' rows as plain values, read once per group through the group's own
# transaction (a session of their own cost a second connection's checkout and transaction).
_COLLECTIONS: Table = tables.CollectionRow.__table__  # type: ignore[attr-defined]
_COLLECTION_VALUES = select(*_COLLECTIONS.c).order_by(_COLLECTIONS.c.name)


def _collections(
    engine: StoreEngine, session: Session, statements: DriverStatements | None
) -> dict[str, tables.CollectionRow]:
    """The collections as the index has them now. The rows of the last group are reused when
    the values are the same (building them through the ORM cost a group 0.1 ms)."""
    if statements is not None:
        names = [column.name for column in _COLLECTIONS.c]
        stored = statements.rows(_COLLECTION_VALUES, {})
        found = [dict(zip(names, row, strict=True)) for row in stored]
    else:
        found = [dict(mapping) for mapping in session.execute(_COLLECTION_VALUES).mappings()]
    values = tuple(tuple(mapping.values()) for mapping in found)
    seen = engine.group_collections
    if seen is not None and seen[0] == values:
        return dict(seen[1])
    if statements is not None:  # the driver's values are the stored ones: times as text
        for mapping in found:
            mapping["created_at"] = parse_iso(mapping["created_at"])
    rows = {mapping["name"]: tables.CollectionRow(**mapping) for mapping in found}
    engine.group_collections = (values, rows)
    return dict(rows)
