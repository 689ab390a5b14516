"""The write path's bookkeeping, a part of MemoryEngine (engine/storage/store.py): the home's
write lock across processes, the journal of unfinished writes and the group commit a write may
be part of.

The write lock (`HomeLock`): flock(2) on `.write.lock` beside the SQLite index
(`<home>/.write.lock` for the home's own index.sqlite). A writer that finds it taken waits in
the kernel, not by polling: the lock passes to a waiter the moment its holder lets go, and a
waiting process spends no CPU. (Polling every 2 ms left the home idle for a millisecond on
average at each hand-off between processes, and each failed poll cost a waiter ~50 us of
CPU.)

The journal: a new fact's write is journalled in `<home>/.inflight/<recordId>.json` before its
file is written, and the entry goes once its row is committed. An entry left behind is a write
that did not finish; the first write lock taken afterwards settles it
(engine/storage/reindex.py `settle_unfinished_writes`).

A group commit (engine/storage/group_commit.py) applies several writes in one hold of the
write lock and one index transaction: while one is open on a thread, that thread's writes read
and write through the group's session, their fact files are synced together and put in place
just before the group's commit, and their journal entries go only once that commit is done."""

from __future__ import annotations

import errno
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
from engine.storage.factfiles import write_atomically
from engine.storage.home import read_only_refusal

if TYPE_CHECKING:
    from engine.storage.group_commit import WriteBatch
    from engine.storage.tables import CollectionRow

# Where writes that have not finished are journalled (one JSON file per new fact).
JOURNAL_FOLDER = ".inflight"

try:
    import fcntl
except ImportError:  # Windows: filelock's polled lock instead
    fcntl = None  # type: ignore[assignment]


class HomeLock:
    """An exclusive lock on a file across processes. Each hold has a descriptor of its own
    (closing it releases the lock, so a killed holder releases it too); threads of one
    process must take turns before they ask (MemoryEngine's thread lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._held: int | None = None
        self._fallback: Any = None
        if fcntl is None:
            from filelock import FileLock

            self._fallback = FileLock(str(path))

    def acquire(self, timeout: float) -> bool:
        """Take the lock, waiting at most `timeout` s; False if it stayed taken."""
        if self._fallback is not None:
            from filelock import Timeout

            try:
                self._fallback.acquire(timeout=timeout, poll_interval=0.002)
            except Timeout:
                return False
            return True
        try:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            # Made writable, or read-only, after the store opened (the open checks first).
            why = f"its write lock {self.path.name} cannot be opened: {exc.strerror}"
            raise read_only_refusal(self.path.parent, why) from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if timeout <= 0:  # only if free now: no thread left waiting for it
                os.close(descriptor)
                return False
            if not _wait_for_flock(descriptor, timeout):
                return False  # the descriptor is the waiting thread's to close
        except BaseException:
            os.close(descriptor)
            raise
        self._held = descriptor
        return True

    def release(self) -> None:
        if self._fallback is not None:
            self._fallback.release()
            return
        descriptor, self._held = self._held, None
        if descriptor is not None:
            os.close(descriptor)  # releases the flock


def _wait_for_flock(descriptor: int, timeout: float) -> bool:
    """Block on the lock in a helper thread (a blocking flock cannot time out), for at most
    `timeout` s. Given up, the helper closes the descriptor once it has the lock, which hands
    it straight on; an error of the wait itself is raised here."""
    taken = threading.Event()
    guard = threading.Lock()
    outcome: dict[str, Any] = {"abandoned": False, "error": None}

    def block() -> None:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        except OSError as exc:
            outcome["error"] = exc
        with guard:
            if outcome["abandoned"]:
                os.close(descriptor)
                return
            taken.set()

    threading.Thread(target=block, name="gno-write-lock-wait", daemon=True).start()
    taken.wait(timeout)
    with guard:
        if not taken.is_set():
            outcome["abandoned"] = True
            return False
    if outcome["error"] is not None:
        os.close(descriptor)
        raise outcome["error"]
    return True


class WriteJournal:
    """Mixed into MemoryEngine, which sets `home` and `db` and defines `now`."""

    home: Path
    db: Engine
    _batch: WriteBatch | None = None
    _batch_thread: int | None = None
    # The collections a group commit last read: (their values, their rows), group_commit.py's.
    group_collections: tuple[Any, dict[str, CollectionRow]] | None = None
    # Why this process may not write the home, or None (MemoryEngine sets it at open): the
    # journal of a read-only home is read, never changed.
    read_only: str | None = None

    def now(self) -> datetime:
        raise NotImplementedError

    @property
    def files_canonical(self) -> bool:
        """The embedded mode (SQLite): the fact files and collections.yaml are canonical, the
        database an index rebuilt from them, and writes are journalled here. False in the
        server mode (PostgreSQL): the database is canonical, nothing is journalled, and the
        home holds only local settings."""
        return self.db.dialect.name != "postgresql"

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
        if not self.files_canonical or self.read_only is not None:
            return
        (self.journal_folder / f"{record_id}.json").unlink(missing_ok=True)

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
        """Anything in the journal folder: an entry, or the temp file of one being written."""
        if not self.files_canonical:
            return False
        try:
            with os.scandir(self.journal_folder) as entries:
                return any(True for _ in entries)
        except OSError:
            return False

    def unfinished_writes(self) -> dict[str, dict[str, Any]]:
        """The journal: record id -> its entry (`collection`, `relPath`, maybe `leftOut`)."""
        found: dict[str, dict[str, Any]] = {}
        if not self.files_canonical or not self.journal_folder.is_dir():
            return found
        for path in sorted(self.journal_folder.glob("mem-*.json")):
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                entry = None
            found[path.stem] = entry if isinstance(entry, dict) else {"recordId": path.stem}
        return found

    # -- the group commit a write may be part of ---------------------------------------------

    def current_batch(self) -> WriteBatch | None:
        """The group commit open on this thread, if any (other threads never see it)."""
        if self._batch is not None and self._batch_thread == threading.get_ident():
            return self._batch
        return None

    def bind_batch(self, batch: WriteBatch | None) -> None:
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
