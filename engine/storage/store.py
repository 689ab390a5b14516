"""MemoryEngine: a home's storage, the coordinator the domain modules (engine/memory,
engine/curation, ...) work on: the write lock (threads of this process, then the store's lock
across processes), the collections, the ranking snapshot and the retrieval backend, the
session query helpers take. Surfaces do not use it directly: they go through
engine.facade.MemoryService.

It is handed its database engine and embedder; it owns no module-level state. How the store
is kept is the `Store` it chooses from its database (engine/storage/mode.py, `store_for`): the
embedded store (fact files and collections.yaml canonical, a SQLite index beside them, the
home's lock file, the journal of unfinished writes: engine/storage/embedded/store.py) or the
server store (a PostgreSQL database canonical, its advisory lock, LISTEN/NOTIFY:
engine/storage/server/store.py). Nothing here asks which it is.

Crash and corruption in the embedded store (docs/decisions.md): a new fact's write is
journalled in `<home>/.inflight/<recordId>.json` before its file is written and the entry is
removed once its row is committed (engine/storage/journal.py, which also holds the group
commit a write may be part of). An entry left behind is a write that did not finish (killed,
or its index write failed); the first write lock taken afterwards settles it before anything
else (engine/storage/embedded/reindex.py `settle_unfinished_writes`), so no write starts from
an index that lags the files. What opening a home repairs is the store's `prepare`."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import (
    check_collection_name,
    check_policy,
    is_record_id,
    new_record_id,
    utc_now,
)
from engine.retrieval.embeddings import EmbedderStatus, VectorsAhead
from engine.retrieval.index_cache import SnapshotCache
from engine.retrieval.registry import REGISTRY, Place, Registry
from engine.retrieval.seam import RetrievalIndex
from engine.retrieval.snapshot import Snapshot
from engine.storage.compaction import Compaction
from engine.storage.crash_hook import stop_here
from engine.storage.disk_full import CUT_SHORT, disk_full_said
from engine.storage.embedded.collections_file import (
    relocate_roots,
)
from engine.storage.embedded.home import (
    make_home,
    read_only_refusal,
)
from engine.storage.embedded.home_lock import HomeLock
from engine.storage.embedded.read_only import (
    CREATED_ELSEWHERE,
    ReadOnlyReads,
    created_elsewhere_refusal,
    memory_index,
    read_only_index,
    refuse_writes,
)
from engine.storage.indexing import insert_new_fact, vector_values
from engine.storage.journal import WriteJournal
from engine.storage.mode import FactSink, Store
from engine.storage.reads import collection_named
from engine.storage.reads.derived import GenerationCache
from engine.storage.reads.orm import OrmReads
from engine.storage.reads.records import NewFact
from engine.storage.reads.snapshot_rows import fetch_facts
from engine.storage.schema import tables
from engine.storage.schema import version as schema
from engine.storage.schema.database import (
    bump_generation,
    generation_of,
    sqlite_file_of,
)

DEFAULT_COLLECTION = "memory"


def store_for(db: Engine) -> Store:
    """How a home's store is kept, from its database: PostgreSQL is the server store (the
    database canonical, shared by homes on many machines), any other the embedded one (fact
    files canonical, the database an index beside them)."""
    # Each imported here: a process loads only its own store's modules.
    if db.dialect.name == "postgresql":
        from engine.storage.server.store import ServerStore

        return ServerStore()
    from engine.storage.embedded.store import EmbeddedStore

    return EmbeddedStore()


WRITE_LOCK_TIMEOUT_S = 10.0

log = logging.getLogger("engine.storage")


class MemoryEngine(WriteJournal):
    def __init__(
        self,
        *,
        home: Path,
        db: Engine,
        embedder_status: EmbedderStatus,
        clock: Callable[[], datetime] = utc_now,
        ids: Callable[[], str] | None = None,
        lock_timeout: float = WRITE_LOCK_TIMEOUT_S,
        backends: Registry = REGISTRY,
        reading: bool = False,
        recover_claims: Callable[[MemoryEngine, float], int] | None = None,
    ) -> None:
        """`clock` gives every time the engine writes (createdAt, decisions, receipts...);
        `ids` gives every record id it mints: a callable returning a whole record id,
        `mem-` + 16 lowercase hex (engine.contract.normalize.new_record_id, random, when
        None; counted_record_ids() for reproducible ones). Ids read from imported files or
        fact files are kept as they are. `backends`: the retrieval registry to choose from.
        `reading`: opened only to read (recall, status), so it need not wait for a process
        that is creating a brand-new home (read_only.created_elsewhere).
        `recover_claims(engine, wait)`: settles review claims left by a decider that is gone
        (the background compaction runs it)."""
        self.home = Path(home)
        make_home(self.home)  # a coded error for a path that cannot be a home folder
        self.db = db
        # How this home's store is kept (embedded or server), chosen once from its database.
        self.store: Store = store_for(db)
        # What opening the home, or settling unfinished writes, repaired: one sentence each.
        self.notes: list[str] = []
        self.embedder_status = embedder_status
        self._clock = clock
        self._ids = ids if ids is not None else new_record_id
        # What domain modules derive from the index between queries (the keyed search's
        # corpora), per generation: the engine's, so no module keeps store data.
        self.derived = GenerationCache()
        self.vectors_ahead = VectorsAhead()  # embedded before a write's lock (embed_ahead)
        self._resolved_folders: dict[str, str] = {}  # absolute_path's
        # Beside the SQLite index: the home's own index.sqlite gives <home>/.write.lock, and
        # homes pointed at one SQLite file by --db take one lock, so their writes are ordered
        # (two locks let both open write transactions on the file, and SQLite refuses the
        # second one's upgrade: MEMORY_SYNC_FAILED). Not the server mode's: it is the
        # database's advisory lock (engine/storage/server/parts.py).
        index = self.sqlite_path
        self._lock = HomeLock((index.parent if index is not None else self.home) / ".write.lock")
        self._lock_timeout = lock_timeout
        self._thread_lock = threading.RLock()  # reentrant: a writer may nest write paths
        self._lock_depth = 0  # holds of write_lock() by the thread holding it
        # Keeps what grows with use bounded, on a thread of its own (compaction.py); it also
        # settles review claims whose deciding process is gone, with `recover_claims`
        # (curation's, handed in by the façade's factory: storage does not import curation),
        # set before anything is written, so the first run has it.
        self.compaction = Compaction(self)
        if recover_claims is not None:
            self.compaction.recover_claims = lambda wait: recover_claims(self, wait)
        # The index is the home's own (<home>/index.sqlite, not one shared by --db): a copy or
        # move of the home carries it, and its roots follow the home (_relocate_roots).
        self._own_index = index is not None and index.parent.resolve() == self.home.resolve()
        self._moved_roots: dict[str, str] = {}  # a read-only copied home's, for this process
        # Why this process may not write the home (None: it may). Then the index is read
        # through a read-only connection, or one in memory built from the files when the home
        # has none (engine/storage/embedded/read_only.py), and every write is refused.
        self.read_only = self.store.why_read_only(self, index, reading=reading)
        self._building = False  # the read-only home's index in memory, being built
        self._memory_reason: str | None = None
        if self.read_only is not None and index is not None:
            self.db.dispose()
            if index.is_file() and self.read_only != CREATED_ELSEWHERE:
                self.db, immutable = read_only_index(index)
                refuse_writes(self.db, self.read_only_refusal)
                if immutable and Path(f"{index}-wal").exists():
                    self.note(
                        f"the home is read-only and {index.name}-wal cannot be shared: read "
                        f"{index.name} as it is, without the writes still in its log."
                    )
            else:
                missing = (
                    "is missing" if self.read_only != CREATED_ELSEWHERE else "has no tables yet"
                )
                self.db, self._memory_reason = memory_index(), missing
        # What the index and recall read (engine/storage/reads/__init__.py), through the ORM.
        self.reads: OrmReads = (
            ReadOnlyReads(self.db)
            if self.read_only is not None
            else OrmReads(self.db, on_receipt=self.compaction.note)
        )
        self._snapshots = SnapshotCache(self.reads, embedder_status.embedder, self._index_file())
        # The retrieval backend, chosen from `backends` at the first query.
        self._backends = backends
        self._index: Callable[[], RetrievalIndex] | None = None
        self._collections: tuple[int, dict[str, tables.CollectionRow]] | None = None
        self._open_report: dict[str, Any] | None = None
        self._prepare()

    # -- infrastructure ---------------------------------------------------------------------

    def now(self) -> datetime:
        return self._clock()

    def new_record_id(self) -> str:
        """A record id for a new fact, from the `ids` generator the engine was opened with."""
        record_id = self._ids()
        if not is_record_id(record_id):
            raise MemoryFailure(
                "MEMORY_INTERNAL",
                f"The record-id generator returned {record_id!r}, not mem-<16 lowercase hex>.",
            )
        return record_id

    @contextmanager
    def write_lock(self, *, settle: bool = True, timeout: float | None = None) -> Iterator[None]:
        """The home's write lock. Its first hold settles unfinished writes left in the journal
        (a crashed or failed write's file is indexed, or left out if it would fork), so that
        no write starts from an index that lags the files; `settle=False` is for reindex and
        opening, which do that themselves. `timeout`: another wait than the engine's."""
        wait = self._lock_timeout if timeout is None else timeout
        if self.read_only is not None and not self._building:
            raise self.read_only_refusal()
        # Threads of this process queue on a thread lock first, so that a process with many
        # waiting threads does not win the cross-process lock more often than a one-thread
        # writer.
        if not self._thread_lock.acquire(timeout=wait):
            raise MemoryFailure(
                "MEMORY_WRITE_LEASE_BUSY",
                f"Other writers in this process held the store for {wait:g} s. Retry shortly.",
            )
        try:
            with self._locked_across_processes(wait):
                self._lock_depth += 1
                try:
                    if settle and self._lock_depth == 1 and self.has_unfinished_writes():
                        from engine.storage.embedded.reindex import settle_unfinished_writes

                        for note in settle_unfinished_writes(self):
                            self.note(note)
                    with disk_full_said(self.home, CUT_SHORT):  # every write path
                        yield
                finally:
                    self._lock_depth -= 1
                    outermost = self._lock_depth == 0
        finally:
            self._thread_lock.release()
        if outermost and self.read_only is None:  # a write done: what grows with use is
            self.compaction.note()  # checked now and then (never in a read-only home)

    @contextmanager
    def _locked_across_processes(self, wait: float) -> Iterator[None]:
        """The lock every process writing to this store takes: the home's lock file in the
        embedded mode, the database's advisory lock in the server mode (homes on many
        machines share the database). Taken once per outermost hold of this thread."""
        if self._lock_depth > 0 or self.read_only is not None:
            # This thread holds it already (a nested write path), or the home is read-only
            # and only the index this process built in memory is written.
            yield
        else:
            with self.store.locked_across_processes(self, wait):
                yield

    @property
    def home_lock(self) -> HomeLock:
        """The home's lock file (the embedded store's write lock across processes)."""
        return self._lock

    def _prepare(self) -> None:
        """Create the tables and the default collection on first use, once across processes;
        then whatever the store repairs at open (the module docstring)."""
        self.store.prepare(self)

    def report_open_notes(self) -> None:
        """What opening repaired goes into the open report (reindex folds it into its own)."""
        if self.notes:
            self._open_report = self._open_report or {"added": 0, "changed": 0, "removed": 0}
            self._open_report["notes"] = list(self.notes)

    def set_open_report(self, report: dict[str, Any]) -> None:
        self._open_report = report

    def prepare_schema(self) -> bool:
        """The schema at this gno-tui's revision (engine/storage/schema/version.py: one query when
        it is), and the collections. True when the index had no tables. An index a newer
        gno-tui migrated is refused before anything changes."""
        revision = schema.stored_revision(self.db)
        if revision == schema.HEAD and not self._collections_to_prepare():
            return False
        schema.refuse_unknown(revision, self.db)
        missing = False
        with self.write_lock(settle=False):
            if revision != schema.HEAD:
                missing = schema.tables_missing(self.db)
                if missing:
                    stop_here("schema-creating")  # tests only: a new home's lock, no tables
                for note in schema.upgrade_to_head(self.db):
                    self.note(note)
            self.prepare_collections()
        return missing

    def prepare_collections(self) -> None:
        """Under the write lock: the collections collections.yaml lists, the default one, and
        collections.yaml written from them."""
        self.store.collections_synced(self)
        # Read again under the lock: in the server mode engines on other homes may have
        # opened the same new database at this moment, and the first one made the row.
        if DEFAULT_COLLECTION not in self.collections_by_name():
            self.add_collection(
                DEFAULT_COLLECTION,
                policy="local_only",
                policy_source="config_default",
                _locked=True,
            )
        self.store.collections_changed(self)

    def _collections_to_prepare(self) -> bool:
        return self.store.collections_to_prepare(self)

    # -- a read-only home (engine/storage/embedded/read_only.py)
    # --------------------------------------

    def read_only_refusal(self) -> MemoryFailure:
        """MEMORY_HOME_READ_ONLY for this home (only while it is read-only)."""
        assert self.read_only is not None
        if self.read_only == CREATED_ELSEWHERE:
            return created_elsewhere_refusal(self.home, self._lock.path)
        return read_only_refusal(self.home, self.read_only)

    @property
    def memory_reason(self) -> str | None:
        """Why a read-only home's index is built in memory from the start (it has none)."""
        return self._memory_reason

    def use_database(self, db: Engine, *, persisted: bool) -> None:
        """Read `db` from now on (a read-only home's index built in memory); `persisted`: keep
        using the home's saved ranking index (engine/retrieval/persisted.py)."""
        self.db.dispose()
        self.db = db
        self.reads = ReadOnlyReads(db)
        embedder = self.embedder_status.embedder
        self._snapshots = SnapshotCache(
            self.reads, embedder, self._index_file() if persisted else None
        )
        self.derived = GenerationCache()
        self._collections = None

    @contextmanager
    def building_in_memory(self) -> Iterator[None]:
        """The write lock admits the writes that build a read-only home's index in memory."""
        self._building = True
        try:
            yield
        finally:
            self._building = False

    def set_moved_roots(self, moved: dict[str, str]) -> None:
        """Roots a read-only copied home uses instead of the index's (for this process)."""
        self._moved_roots = dict(moved)
        self._collections = None

    # -- the storage mode -------------------------------------------------------------------

    @property
    def fact_sink(self) -> FactSink:
        """Where facts' files go in this store (engine/storage/fact_sink.py)."""
        return self.store.sink

    def note(self, message: str) -> None:
        """Record a repair (surfaces show `notes`) and log it as a warning."""
        self.notes.append(message)
        log.warning("gno-tui: %s", message)

    def take_open_report(self) -> dict[str, Any] | None:
        """What opening the home repaired (counts as reindex reports them, and notes), once:
        the first reindex of this engine folds it into its own report."""
        report, self._open_report = self._open_report, None
        return report

    # -- a missing, empty or unreadable index ----------------------------------------------

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite index file, or None for another database (or an in-memory one)."""
        return sqlite_file_of(self.db)

    def holds_a_fact(self) -> bool:
        """The index holds at least one fact row."""
        with Session(self.db) as session:
            return session.execute(select(tables.FactRow.record_id).limit(1)).first() is not None

    def forget_derived(self) -> None:
        """Drop what was derived from the index (the ranking snapshot, per-generation data):
        its database was replaced (engine/storage/embedded/damaged_index.py)."""
        self._snapshots = SnapshotCache(
            self.reads, self.embedder_status.embedder, self._index_file()
        )
        self.derived = GenerationCache()

    def _index_file(self) -> Path | None:
        """Where this home keeps its index between processes (engine/retrieval/persisted.py)."""
        return self.store.index_file(self)

    def snapshot(self) -> Snapshot:
        return self._snapshots.get()

    def index_after_bulk(self) -> None:
        """After an import: this process's index brought up to date with the import's facts
        and written for the next process (the saver finishes before the process exits)."""
        if self._snapshots.held:
            self._snapshots.get(after_bulk=True)

    def retrieval(self) -> RetrievalIndex:
        """The index ranking asks (engine/retrieval/seam.py), of the backend the registry
        chose at the first query (engine/retrieval/registry.py)."""
        if self._index is None:
            place = Place(self.db.dialect.name, self.db, read_facts=fetch_facts)
            backend = self._backends.choose(place)
            self._index = backend.open(
                place, self.embedder_status.embedder, lambda: self._snapshots.get()
            )
        return self._index()

    @property
    def retrieval_backend(self) -> str:
        """Where recall ranks, by its registry name (`postgres`, `in-memory`)."""
        return self.retrieval().name

    def generation(self) -> int:
        return generation_of(self.db)

    @contextmanager
    def session(self, *, expire_on_commit: bool = True) -> Iterator[Session]:
        """A session on the store's database, for the query helpers the domain modules call
        (engine/storage/queries: each takes it explicitly). `expire_on_commit=False` keeps
        the rows read usable after the session ends."""
        with Session(self.db, expire_on_commit=expire_on_commit) as session:
            yield session

    # -- collections ------------------------------------------------------------------------

    @property
    def collections_file(self) -> Path:
        return self.home / "collections.yaml"

    def collections_file_missing(self) -> bool:
        return not self.collections_file.is_file()

    def collections_by_name(self) -> dict[str, tables.CollectionRow]:
        batch = self.current_batch()
        if batch is not None:  # read once per group: changing a collection takes the lock
            return dict(batch.collections)
        # Kept per generation (every change to a collection moves it): every recall asks,
        # and the query cost 0.5 ms of a 10k-fact recall.
        generation = self.generation()
        kept = self._collections
        if kept is not None and kept[0] == generation:
            return dict(kept[1])
        with Session(self.db, expire_on_commit=False) as session:
            rows = session.scalars(select(tables.CollectionRow)).all()
            for row in rows:
                session.expunge(row)
        found = {row.name: row for row in rows}
        for name, root in self._moved_roots.items():  # a read-only copied home's own folders
            if name in found:
                found[name].root = root
        if self.generation() == generation:  # nothing changed while it was read
            self._collections = (generation, found)
        return dict(found)

    def require_collection(self, name: str) -> tables.CollectionRow:
        collections = self.collections_by_name()
        if name not in collections and name == DEFAULT_COLLECTION:
            self.store.default_collection_missing(self, name)
            collections = self.collections_by_name()
        return collection_named(collections, name)

    def collection_root(self, name: str) -> Path:
        """The folder of a collection's fact files (a coded error where a collection is rows
        in a database and has no folder)."""
        return self.store.collection_folder(self.require_collection(name))

    def absolute_path(self, path: Path) -> str:
        """A fact file's path with its folder's symlinks resolved, as results report it. The
        folder's resolution is kept (resolving the whole path cost a write a twentieth of its
        hold of the write lock); a file's own name is never a link."""
        folder = str(path.parent)
        resolved = self._resolved_folders.get(folder)
        if resolved is None:
            if len(self._resolved_folders) > 64:  # one folder a day per collection
                self._resolved_folders.clear()
            resolved = self._resolved_folders[folder] = str(path.parent.resolve())
        return f"{resolved}{os.sep}{path.name}"

    def add_collection(
        self,
        name: str,
        *,
        path: str | Path | None = None,
        policy: str = "local_only",
        policy_source: str = "explicit",
        _locked: bool = False,
    ) -> tables.CollectionRow:
        """Record a collection whose root is usable. `<root>/facts` is made and a probe file
        written and removed there *before* the row is inserted, so an unusable root (not
        writable, under a regular file) is MEMORY_COLLECTION_INVALID with no row, no entry in
        collections.yaml and no folder left behind: every surface gets the same check."""
        check_collection_name(name)
        check_policy(policy)
        if not _locked:
            self.store.collections_read(self)
        with self._maybe_locked(_locked):
            row = self.store.add_collection(self, name, path, policy, policy_source)
        self.store.collections_changed(self)
        return row

    def set_policy(self, name: str, policy: str, *, actor: str) -> tables.CollectionRow:
        check_policy(policy)
        self.store.collections_read(self)
        with self.write_lock(), Session(self.db, expire_on_commit=False) as session:
            row = session.get(tables.CollectionRow, name)
            if row is None:
                self.require_collection(name)
            assert row is not None
            before = {
                "policy": row.policy,
                "source": row.policy_source,
                "revision": row.policy_revision,
            }
            row.policy, row.policy_source = policy, "explicit"
            row.policy_revision += 1
            session.add(
                tables.DecisionRow(
                    at=self.now(),
                    actor=actor,
                    action="set-policy",
                    target=name,
                    detail={"before": before, "after": {"policy": policy}},
                )
            )
            bump_generation(session)
            session.commit()
            session.refresh(row)
            session.expunge(row)
        self.store.collections_changed(self)
        return row

    @contextmanager
    def _maybe_locked(self, already: bool) -> Iterator[None]:
        if already:
            yield
        else:
            with self.write_lock():
                yield

    def relocate_roots(self) -> None:
        """A home copied or moved with its own index: roots that point into the folder it came
        from are pointed at this home's (engine/storage/embedded/collections_file.py)."""
        if self._own_index:
            relocate_roots(self)

    # -- the index half of a write -------------------------------------------------------

    def index_new_fact(self, row: NewFact, predecessor: tables.FactRow | None) -> None:
        """The index half of a write (a seam the fault-injection test replaces): the row, its
        scope rows and its vector in one transaction, or inside a group commit in one
        savepoint of the group's (a failure takes back this write's rows only)."""
        vector = vector_values(self, row)
        batch = self.current_batch()
        if batch is not None:
            # The group's transaction moves the generation once for all its writes.
            def insert() -> None:
                insert_new_fact(
                    batch.session,
                    row,
                    predecessor,
                    self.now(),
                    vector=vector,
                    bump=False,
                    statements=batch.statements,
                )

            if not batch.sole:
                with batch.session.begin_nested():
                    insert()
                return
            try:
                insert()
            except BaseException:
                batch.session.rollback()
                raise
            return
        with Session(self.db, expire_on_commit=False) as session:
            insert_new_fact(session, row, predecessor, self.now(), vector=vector)
            stop_here("single-indexed")  # tests only: the row in the open transaction
            session.commit()
