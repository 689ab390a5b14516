"""Group commit: writes that wait together are applied in one hold of the write lock and one
index transaction, and each is answered only once that transaction is committed.

A server that receives several writes at once (an MCP server with calls in flight) runs them
inside `write_batch`: each write is the ordinary remember path (its own checks, journal entry
and fsynced fact file), but its rows go into a savepoint of the group's transaction instead of
a transaction of their own, and its journal entry stays until the group's commit. So:

- one lock hand-off, one generation bump and one commit for the group instead of one each;
- a write that fails (a lost supersede race, a refused row) rolls back its own savepoint only;
- the group's later writes see its earlier ones (the exact check, a supersede of a fact added
  in the same group), because they read through the group's session;
- a crash before the commit leaves journalled files without rows, which the next write lock
  settles exactly as a single write killed between its file and its row (none of them had
  been acknowledged); if the commit itself fails, every write of the group answers
  `sync: failed` (its file is written and journalled, indexed by the next write), as one
  write whose index write failed does. In the server mode there is no file to stand for them:
  a failed commit fails every write of the group (none was acknowledged)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from engine.storage import tables
from engine.storage.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

log = logging.getLogger("engine.storage")

_COMMIT_FAILED = (
    "The group of writes this one belonged to could not be committed to the index ({error}). "
    "The fact file is written and its write stays journalled: the next write to this home "
    "indexes it first, or run `gno-tui reindex` to bring the index in line now."
)


class WriteBatch:
    """One open group: its session, the collections (stable while the write lock is held:
    changing one takes it) and the writes whose journal entries wait for the commit."""

    def __init__(self, session: Session, collections: dict[str, tables.CollectionRow]) -> None:
        self.session = session
        self.collections = collections
        self._written: list[tuple[str, dict[str, Any]]] = []

    def written(self, record_id: str, sync: dict[str, Any]) -> None:
        self._written.append((record_id, sync))

    def settle(self, engine: MemoryEngine) -> None:
        """Commit; then the journal entries go. A failed commit marks every write failed."""
        try:
            self.session.commit()
        except Exception as exc:  # embedded mode: the files are canonical, indexed later
            log.warning("gno-tui: a group commit of %d writes failed: %s", len(self._written), exc)
            self.session.rollback()
            if not engine.files_canonical:
                raise  # server mode: no file stands for them, so no write is acknowledged
            for _, sync in self._written:
                sync.clear()
                sync.update(status="failed", error=_COMMIT_FAILED.format(error=exc))
            return
        for record_id, _ in self._written:
            engine.end_write(record_id)


@contextmanager
def write_batch(engine: MemoryEngine) -> Iterator[WriteBatch]:
    """Hold the write lock and one index transaction for the writes run inside (on this
    thread); commit when the block ends. Write paths that know nothing of groups (anything
    but remember's add and supersede) must not run inside: they would wait on the group's
    open transaction from a session of their own."""
    with engine.write_lock():
        collections = engine.collections_by_name()
        with Session(engine.db, expire_on_commit=False) as session:
            # A write first, so the transaction is open before any savepoint: SQLite's driver
            # would otherwise let the first savepoint's release commit on its own.
            bump_generation(session)
            session.flush()
            batch = WriteBatch(session, collections)
            engine.bind_batch(batch)
            try:
                yield batch
            except BaseException:
                session.rollback()
                raise
            finally:
                engine.bind_batch(None)
            batch.settle(engine)
