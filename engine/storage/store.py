"""MemoryEngine: a home's storage. The database, the write lock, the collections and the
ranking snapshot, which the domain modules (engine/memory, engine/curation, ...) work on.
Surfaces do not use it directly: they go through engine.facade.MemoryService.

It is handed its database engine and embedder; it owns no module-level state. Writes take the
home's write lock (a file lock, so it holds across processes) for at most `lock_timeout` s."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import yaml
from filelock import FileLock, Timeout
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
from engine.retrieval.embeddings import EmbedderStatus
from engine.retrieval.snapshot import Snapshot, SnapshotCache
from engine.storage import tables
from engine.storage.database import (
    bump_generation,
    columns_missing,
    create_tables,
    read_generation,
    tables_missing,
)
from engine.storage.derived import GenerationCache
from engine.storage.factfiles import write_atomically
from engine.storage.indexing import insert_fact_row, keep_vector

DEFAULT_COLLECTION = "memory"
WRITE_LOCK_TIMEOUT_S = 10.0


class MemoryEngine:
    def __init__(
        self,
        *,
        home: Path,
        db: Engine,
        embedder_status: EmbedderStatus,
        clock: Callable[[], datetime] = utc_now,
        ids: Callable[[], str] | None = None,
        lock_timeout: float = WRITE_LOCK_TIMEOUT_S,
    ) -> None:
        """`clock` gives every time the engine writes (createdAt, decisions, receipts...);
        `ids` gives every record id it mints: a callable returning a whole record id,
        `mem-` + 16 lowercase hex (engine.contract.normalize.new_record_id, random, when
        None; counted_record_ids() for reproducible ones). Ids read from imported files or
        fact files are kept as they are."""
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        self.db = db
        self.embedder_status = embedder_status
        self._clock = clock
        self._ids = ids if ids is not None else new_record_id
        # What domain modules derive from the index between queries (the keyed search's
        # corpora), per generation: the engine's, so no module keeps store data.
        self.derived = GenerationCache()
        self._lock = FileLock(str(self.home / ".write.lock"), timeout=lock_timeout)
        self._lock_timeout = lock_timeout
        self._thread_lock = threading.RLock()  # reentrant: a writer may nest write paths
        self._snapshots = SnapshotCache(db, embedder_status.embedder)
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
    def write_lock(self) -> Iterator[None]:
        # Threads of this process queue on a thread lock first, so that a process with many
        # waiting threads does not win the file lock more often than a one-thread writer.
        if not self._thread_lock.acquire(timeout=self._lock_timeout):
            raise MemoryFailure(
                "MEMORY_WRITE_LEASE_BUSY",
                f"Other writers in this process held the store for {self._lock_timeout:g} s. "
                "Retry shortly.",
            )
        try:
            with self._file_locked():
                yield
        finally:
            self._thread_lock.release()

    @contextmanager
    def _file_locked(self) -> Iterator[None]:
        try:
            self._lock.acquire(timeout=self._lock_timeout, poll_interval=0.01)
        except Timeout as exc:
            raise MemoryFailure(
                "MEMORY_WRITE_LEASE_BUSY",
                f"Another process held the store's write lock for {self._lock_timeout:g} s "
                f"({self.home / '.write.lock'}). Retry shortly; if no gno-tui is running, "
                "the lock file can be removed.",
            ) from exc
        try:
            yield
        finally:
            self._lock.release()

    def _prepare(self) -> None:
        """Create the tables and the default collection on first use, once across processes."""
        if tables_missing(self.db) or self.collections_file_missing() or columns_missing(self.db):
            with self.write_lock():
                create_tables(self.db)
                self._sync_collections_from_file()
                if DEFAULT_COLLECTION not in self.collections_by_name():
                    self.add_collection(
                        DEFAULT_COLLECTION,
                        policy="local_only",
                        policy_source="config_default",
                        _locked=True,
                    )
                self._write_collections_file()

    def snapshot(self) -> Snapshot:
        return self._snapshots.get()

    def generation(self) -> int:
        with Session(self.db, expire_on_commit=False) as session:
            return read_generation(session)

    # -- collections ------------------------------------------------------------------------

    @property
    def collections_file(self) -> Path:
        return self.home / "collections.yaml"

    def collections_file_missing(self) -> bool:
        return not self.collections_file.is_file()

    def collections_by_name(self) -> dict[str, tables.CollectionRow]:
        with Session(self.db, expire_on_commit=False) as session:
            rows = session.scalars(select(tables.CollectionRow)).all()
            for row in rows:
                session.expunge(row)
        return {row.name: row for row in rows}

    def require_collection(self, name: str) -> tables.CollectionRow:
        row = self.collections_by_name().get(name)
        if row is None:
            raise MemoryFailure(
                "MEMORY_COLLECTION_NOT_FOUND",
                f"There is no collection {name!r}. Create it with "
                f"`gno-tui collection add {name}` or list them with `gno-tui collection list`.",
            )
        return row

    def collection_root(self, name: str) -> Path:
        return Path(self.require_collection(name).root)

    def add_collection(
        self,
        name: str,
        *,
        path: str | Path | None = None,
        policy: str = "local_only",
        policy_source: str = "explicit",
        _locked: bool = False,
    ) -> tables.CollectionRow:
        check_collection_name(name)
        check_policy(policy)
        root = Path(path).expanduser().resolve() if path else self.home / "collections" / name
        with self._maybe_locked(_locked), Session(self.db, expire_on_commit=False) as session:
            if session.get(tables.CollectionRow, name) is not None:
                raise MemoryFailure(
                    "MEMORY_COLLECTION_INVALID",
                    f"Collection {name!r} already exists; pick another name or change its "
                    f"policy with `gno-tui collection set-policy {name} POLICY`.",
                )
            row = tables.CollectionRow(
                name=name,
                root=str(root),
                policy=policy,
                policy_source=policy_source,
                created_at=self.now(),
            )
            session.add(row)
            bump_generation(session)
            session.commit()
            session.refresh(row)
            session.expunge(row)
        (root / "facts").mkdir(parents=True, exist_ok=True)
        self._write_collections_file()
        return row

    def set_policy(self, name: str, policy: str, *, actor: str) -> tables.CollectionRow:
        check_policy(policy)
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
        self._write_collections_file()
        return row

    @contextmanager
    def _maybe_locked(self, already: bool) -> Iterator[None]:
        if already:
            yield
        else:
            with self.write_lock():
                yield

    def _write_collections_file(self) -> None:
        listing = [
            {
                "name": row.name,
                "root": row.root,
                "policy": row.policy,
                "policySource": row.policy_source,
                "policyRevision": row.policy_revision,
            }
            for row in sorted(self.collections_by_name().values(), key=lambda r: r.name)
        ]
        write_atomically(
            self.collections_file, yaml.safe_dump({"collections": listing}, sort_keys=False)
        )

    def _sync_collections_from_file(self) -> None:
        """collections.yaml is canonical, like the fact files: an index rebuilt from nothing
        gets its collections (and their policies) back from it."""
        if not self.collections_file.is_file():
            return
        loaded = yaml.safe_load(self.collections_file.read_text(encoding="utf-8")) or {}
        with Session(self.db, expire_on_commit=False) as session:
            for entry in loaded.get("collections", []):
                if session.get(tables.CollectionRow, entry["name"]) is None:
                    session.add(
                        tables.CollectionRow(
                            name=entry["name"],
                            root=entry["root"],
                            policy=entry["policy"],
                            policy_source=entry.get("policySource", "explicit"),
                            policy_revision=int(entry.get("policyRevision", 1)),
                            created_at=self.now(),
                        )
                    )
            session.commit()

    # -- the index half of a write -------------------------------------------------------

    def index_new_fact(self, row: tables.FactRow, predecessor: tables.FactRow | None) -> None:
        """The index half of a write (a seam the fault-injection test replaces)."""
        with Session(self.db, expire_on_commit=False) as session:
            insert_fact_row(session, row, predecessor, self.now())
            session.commit()
        keep_vector(self, row)
