"""The write path's bookkeeping, a part of MemoryEngine (engine/storage/store.py): the home's
write lock across processes, the journal of unfinished writes and the group commit a write may
be part of.

The write lock across processes is the store's: the home's lock file in the embedded store
(engine/storage/embedded/home_lock.py), the database's advisory lock in the server store.

The journal: a new fact's write is journalled in `<home>/.inflight/<recordId>.json` before its
file is written, and the entry goes once its row is committed. An entry left behind is a write
that did not finish; the first write lock taken afterwards settles it
(engine/storage/embedded/reindex.py `settle_unfinished_writes`).

A group commit (engine/storage/group_commit.py) applies several writes in one hold of the
write lock and one index transaction: while one is open on a thread, that thread's writes read
and write through the group's session, their fact files are synced together and put in place
just before the group's commit, and their journal entries go only once that commit is done."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from engine.contract.normalize import iso_utc
from engine.storage.embedded.factfiles import write_atomically

if TYPE_CHECKING:
    from engine.storage.mode import OpenBatch, Store
    from engine.storage.schema.tables import CollectionRow

# Where writes that have not finished are journalled (one JSON file per new fact).
JOURNAL_FOLDER = ".inflight"


class WriteJournal:
    """Mixed into MemoryEngine, which sets `home` and `db` and defines `now`."""

    home: Path
    db: Engine
    store: Store  # how the home's store is kept (MemoryEngine chooses it)
    _batch: OpenBatch | None = None
    _batch_thread: int | None = None
    # The collections a group commit last read: (their values, their rows), group_commit.py's.
    group_collections: tuple[Any, dict[str, CollectionRow]] | None = None
    # Why this process may not write the home, or None (MemoryEngine sets it at open): the
    # journal of a read-only home is read, never changed.
    read_only: str | None = None

    def now(self) -> datetime:
        raise NotImplementedError

    # -- the journal of unfinished writes ----------------------------------------------------

    @property
    def journal_folder(self) -> Path:
        return self.home / JOURNAL_FOLDER

    def begin_write(self, record_id: str, collection: str, rel_path: str) -> None:
        """Journal a new fact's write before its file is written (under the write lock).

        Written in place, not through a temp file and a rename: the entry is complete before
        the fact file is begun, so an entry cut short by a kill means no fact file was written,
        and settling drops it, which is right. Not fsynced: the entry serves after a killed
        process, whose written pages the OS keeps; a power loss is not covered either way
        (docs/reliability.md section 1), as neither this folder nor SQLite's WAL
        (synchronous=NORMAL) is synced."""
        entry = {
            "recordId": record_id,
            "collection": collection,
            "relPath": rel_path,
            "startedAt": iso_utc(self.now()),
            "pid": os.getpid(),
        }
        data = (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")
        path = self.journal_folder / f"{record_id}.json"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        try:
            descriptor = os.open(path, flags, 0o644)
        except FileNotFoundError:  # the first write of this home
            self.journal_folder.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, flags, 0o644)
        try:
            os.write(descriptor, data)
        finally:
            os.close(descriptor)

    def write_fact_file(self, record_id: str, path: Path, content: str) -> None:
        """A new fact's file, once its write is journalled: in place and durable now, or,
        inside a group commit, staged (written to its temp name) and put in place with the
        group's other files, durable, before the group's commit."""
        batch = self.current_batch()
        if batch is None:
            write_atomically(path, content)
        else:
            batch.stage(record_id, path, content)

    def take_back_fact_file(self, path: Path) -> None:
        """The file of a write that lost its race: removed (or, staged, never put in place)."""
        batch = self.current_batch()
        if batch is None or not batch.take_back(path):
            path.unlink(missing_ok=True)

    def end_write(self, record_id: str) -> None:
        """The write's row is committed (or its file taken back): the entry goes."""
        if self.read_only is None:  # the journal of a read-only home is never changed
            self.store.forget_write(self.journal_folder, record_id)

    def row_written(self, record_id: str, sync: dict[str, Any]) -> None:
        """A write's row is in the index transaction: its entry goes now, or, inside a group
        commit, once the group is committed (`sync`, the write's result's, then says
        `failed` if that commit fails)."""
        batch = self.current_batch()
        if batch is None:
            self.end_write(record_id)
        else:
            batch.written(record_id, sync)

    def leave_out(self, record_id: str, reason: str) -> None:
        """An unfinished write that cannot be indexed without forking its chain or key: the
        entry stays, marked, so that a reindex without an index still knows it never
        finished."""
        if self.read_only is not None:
            return
        entry = self.unfinished_writes().get(record_id, {"recordId": record_id})
        entry["leftOut"] = reason
        write_atomically(
            self.journal_folder / f"{record_id}.json", json.dumps(entry, sort_keys=True) + "\n"
        )

    def has_unfinished_writes(self) -> bool:
        """Anything in the journal: an entry, or the temp file of one being written."""
        return self.store.has_unfinished_writes(self.journal_folder)

    def unfinished_writes(self) -> dict[str, dict[str, Any]]:
        """The journal: record id -> its entry (`collection`, `relPath`, maybe `leftOut`)."""
        return self.store.unfinished_writes(self.journal_folder) or {}

    # -- the group commit a write may be part of ---------------------------------------------

    def current_batch(self) -> OpenBatch | None:
        """The group commit open on this thread, if any (other threads never see it)."""
        if self._batch is not None and self._batch_thread == threading.get_ident():
            return self._batch
        return None

    def bind_batch(self, batch: OpenBatch | None) -> None:
        self._batch, self._batch_thread = batch, threading.get_ident() if batch else None

    @contextmanager
    def write_session(self) -> Iterator[Session]:
        """The session a write reads its store through under the write lock: the group's
        (which sees the rows of the group's earlier writes), else a session of its own."""
        batch = self.current_batch()
        if batch is not None:
            yield batch.session
            return
        with Session(self.db, expire_on_commit=False) as session:
            yield session
