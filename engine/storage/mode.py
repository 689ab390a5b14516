"""A store, and the engine it serves.

`Store` is the two ways a store is kept, as one abstract class: everything that differs
between the embedded store (fact files canonical, a SQLite index beside them:
engine/storage/embedded/store.py) and the server store (a PostgreSQL database canonical:
engine/storage/server/store.py) is a method or a declared capability here, so no code outside
those two modules asks which mode it runs in. MemoryEngine chooses one from its database.

`StoreEngine` is what a store and the other parts of storage (the bulk write, reindex, group
commit, compaction, the read-only home) may use of the engine of the home they serve;
MemoryEngine (engine/storage/store.py) is its one implementation. Typing those parts against
this protocol, not MemoryEngine, keeps the import graph free of cycles even counting type-only
imports: store.py imports them, they never import it. For the same reason the fact sink and
the open group commit they meet through the engine are protocols here."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from engine.contract.errors import MemoryFailure

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session

    from engine.retrieval.embeddings import EmbedderStatus, VectorsAhead
    from engine.retrieval.seam import RetrievalIndex
    from engine.retrieval.snapshot import Snapshot
    from engine.storage.embedded.factfiles import FactFile
    from engine.storage.embedded.home_lock import HomeLock
    from engine.storage.embedded.sqlite_driver import DriverStatements
    from engine.storage.reads import StoreReads
    from engine.storage.reads.change_feed import ChangeFeed
    from engine.storage.reads.derived import GenerationCache
    from engine.storage.reads.records import NewFact
    from engine.storage.schema import tables

Progress = Callable[[int, int], None]


def no_folder(collection: str) -> MemoryFailure:
    """A collection that is rows in a database has no folder of fact files."""
    return MemoryFailure(
        "MEMORY_USAGE_INVALID",
        f"Collection {collection!r} lives in the database (server mode) and has no folder of "
        "fact files. Write a mirror of its facts with `gno-tui export --format gno "
        "--output DIR`.",
    )


class FactSink(Protocol):
    """Where a new fact's file goes, and what stands of a write whose row failed
    (engine/storage/fact_sink.py has the two sinks)."""

    def write_new(
        self, engine: StoreEngine, fact: FactFile, *, collection: str, rel_path: str
    ) -> Path | None: ...

    def take_back(self, engine: StoreEngine, record_id: str, path: Path | None) -> None: ...

    def index_failed(self, error: str, failure: MemoryFailure | None = None) -> dict[str, Any]: ...

    def commit_failed(self, error: Exception) -> None: ...

    def rewrite_workbench(
        self, engine: StoreEngine, row: tables.FactRow, updates: dict[str, Any | None]
    ) -> None: ...


class Compacting(Protocol):
    """The engine's compaction, as its parts meet it (engine/storage/compaction.py)."""

    recover_claims: Callable[[float], int]

    def note(self, count: int = 1) -> None: ...


class OpenBatch(Protocol):
    """A group commit open on a thread, as the write path meets it
    (engine/storage/group_commit.py's WriteBatch)."""

    session: Session
    collections: dict[str, tables.CollectionRow]
    statements: DriverStatements | None
    sole: bool

    def stage(self, record_id: str, path: Path, content: str) -> None: ...

    def take_back(self, path: Path) -> bool: ...

    def written(self, record_id: str, sync: dict[str, Any]) -> None: ...


class Store(ABC):
    """What a storage mode does its own way. Methods take the engine of the home they serve."""

    name: ClassVar[Literal["embedded", "server"]]  # as `gno-tui status` names it
    # Facts live as files a person can open (and copy, and back up as files); otherwise a
    # fact is a row, and its file exists only as a rendering of it.
    keeps_fact_files: ClassVar[bool]

    # -- opening ----------------------------------------------------------------------------

    @abstractmethod
    def prepare(self, engine: StoreEngine) -> None:
        """Make the store usable at open: the schema and collections, and whatever a crash
        left to repair."""

    @abstractmethod
    def why_read_only(
        self, engine: StoreEngine, index: Path | None, *, reading: bool
    ) -> str | None:
        """Why this process may not write the store (None: it may). `index`: the SQLite index
        file, if any; `reading`: opened only to read."""

    @abstractmethod
    def collections_to_prepare(self, engine: StoreEngine) -> bool:
        """Whether opening has collections to make (besides the schema's migration)."""

    # -- the write lock and the write path -------------------------------------------------

    @abstractmethod
    def locked_across_processes(
        self, engine: StoreEngine, wait: float
    ) -> AbstractContextManager[None]:
        """The lock every process writing to this store takes, waited for up to `wait` s."""

    @property
    @abstractmethod
    def sink(self) -> FactSink:
        """Where a new fact's file goes, and what stands of a write whose row failed."""

    @abstractmethod
    def forget_write(self, journal: Path, record_id: str) -> None:
        """A write's row is committed (or its file taken back): its entry in the `journal`
        folder goes."""

    @abstractmethod
    def has_unfinished_writes(self, journal: Path) -> bool:
        """Anything in the journal of writes that did not finish (a cheap look)."""

    @abstractmethod
    def unfinished_writes(self, journal: Path) -> dict[str, dict[str, Any]] | None:
        """The journal of writes that did not finish (record id -> entry); None when this
        mode keeps none."""

    @abstractmethod
    def recover_interrupted_bulk_writes(
        self, engine: StoreEngine, *, skip_live: bool = True
    ) -> dict[str, int]:
        """Settle what a killed bulk write left (rolledBack, rolledForward, tempFiles)."""

    # -- collections -------------------------------------------------------------------------

    @abstractmethod
    def add_collection(
        self,
        engine: StoreEngine,
        name: str,
        path: str | Path | None,
        policy: str,
        policy_source: str,
    ) -> tables.CollectionRow:
        """Record a new collection, under the write lock the caller holds."""

    @abstractmethod
    def default_collection_missing(self, engine: StoreEngine, name: str) -> None:
        """The default collection asked for and not found: made now when this mode may lack
        it (a server database a crash left without it), else nothing."""

    @abstractmethod
    def collection_folder(self, row: tables.CollectionRow) -> Path:
        """The folder of a collection's fact files (a coded error where there is none)."""

    @abstractmethod
    def collections_changed(self, engine: StoreEngine) -> None:
        """The collections changed: written where this mode keeps them besides the rows."""

    @abstractmethod
    def collections_read(self, engine: StoreEngine) -> None:
        """Before a change to the collections: what this mode keeps of them besides the rows
        is read, and refused when damaged."""

    @abstractmethod
    def collections_synced(self, engine: StoreEngine) -> None:
        """Under the write lock at open: the rows brought in line with what this mode keeps
        of the collections besides them."""

    # -- what is kept beside the database --------------------------------------------------

    @abstractmethod
    def index_file(self, engine: StoreEngine) -> Path | None:
        """Where the ranking index is kept between processes (None: not kept)."""

    @abstractmethod
    def reindex(self, engine: StoreEngine, progress: Progress | None) -> dict[str, Any]:
        """`gno-tui reindex`: bring what is derived in line with what is canonical."""

    @abstractmethod
    def reindex_keeps(self) -> str:
        """What an interrupted reindex leaves as it was (said when the disk fills)."""

    @abstractmethod
    def sweep_files(self, engine: StoreEngine) -> list[str]:
        """Compaction: files this mode keeps beside the database that nothing uses now."""

    # -- facts as files ---------------------------------------------------------------------

    @abstractmethod
    def fact_file(self, engine: StoreEngine, collection: str, rel_path: str) -> Path | None:
        """The file of a fact (None where facts are rows)."""

    @abstractmethod
    def fact_files_on_disk(self, engine: StoreEngine) -> dict[str, Path]:
        """Every fact file in the store's folders, by record id ({} where facts are rows)."""

    @abstractmethod
    def copy_fact_file(self, engine: StoreEngine, row: tables.FactRow, target: Path) -> None:
        """Write a fact's file at `target` (export): a copy of the file, or the file the
        embedded mode would have written, rendered from the row."""

    @abstractmethod
    def served_fact(
        self,
        engine: StoreEngine,
        collection: str,
        uri: str,
        rel_path: str,
        row: tables.FactRow | None,
    ) -> tuple[tables.FactRow, Callable[[], str]] | None:
        """A fact uri served to a reader: its row and its file's text (read or rendered when
        called); None when there is nothing to serve. `row`: None when it is not indexed;
        `rel_path`: where its file would be."""

    @abstractmethod
    def fact_location(self, engine: StoreEngine, collection: str, rel_path: str, uri: str) -> str:
        """Where a person finds a fact: its file, or its uri."""

    # -- what every process of the store must agree on --------------------------------------

    @abstractmethod
    def cursor_secret(self, engine: StoreEngine) -> bytes:
        """The keyed API's cursor key, the same for every process of this store."""

    @abstractmethod
    def change_feed(self, engine: StoreEngine, start: int) -> ChangeFeed:
        """What a surface waits on to learn that some process wrote."""

    @abstractmethod
    def backup_protected(self, engine: StoreEngine) -> list[Path]:
        """Folders a backup must not be written into."""

    @abstractmethod
    def take_backup(self, engine: StoreEngine, target: Path) -> Mapping[str, Any]:
        """Write a backup into `target` (checked and empty)."""


class StoreEngine(Protocol):
    """A home's storage, as its parts see it."""

    home: Path
    db: Engine
    read_only: str | None
    notes: list[str]
    embedder_status: EmbedderStatus
    derived: GenerationCache
    vectors_ahead: VectorsAhead
    group_collections: tuple[Any, dict[str, tables.CollectionRow]] | None

    store: Store

    @property
    def reads(self) -> StoreReads: ...

    @property
    def compaction(self) -> Compacting: ...

    @property
    def fact_sink(self) -> FactSink: ...

    # -- time, ids, notes -------------------------------------------------------------------

    def now(self) -> datetime: ...

    def new_record_id(self) -> str: ...

    def note(self, message: str) -> None: ...

    # -- the write lock and the journal -----------------------------------------------------

    def write_lock(
        self, *, settle: bool = True, timeout: float | None = None
    ) -> AbstractContextManager[None]: ...

    @property
    def home_lock(self) -> HomeLock: ...

    @property
    def journal_folder(self) -> Path: ...

    def begin_write(self, record_id: str, collection: str, rel_path: str) -> None: ...

    def write_fact_file(self, record_id: str, path: Path, content: str) -> None: ...

    def take_back_fact_file(self, path: Path) -> None: ...

    def end_write(self, record_id: str) -> None: ...

    def row_written(self, record_id: str, sync: dict[str, Any]) -> None: ...

    def leave_out(self, record_id: str, reason: str) -> None: ...

    def has_unfinished_writes(self) -> bool: ...

    def unfinished_writes(self) -> dict[str, dict[str, Any]]: ...

    def current_batch(self) -> OpenBatch | None: ...

    def bind_batch(self, batch: OpenBatch | None) -> None: ...

    def write_session(self) -> AbstractContextManager[Session]: ...

    def index_new_fact(self, row: NewFact, predecessor: tables.FactRow | None) -> None: ...

    # -- opening, and the index -------------------------------------------------------------

    def prepare_schema(self) -> bool: ...

    def prepare_collections(self) -> None: ...

    def relocate_roots(self) -> None: ...

    def holds_a_fact(self) -> bool: ...

    def report_open_notes(self) -> None: ...

    def set_open_report(self, report: dict[str, Any]) -> None: ...

    def take_open_report(self) -> dict[str, Any] | None: ...

    @property
    def sqlite_path(self) -> Path | None: ...

    def forget_derived(self) -> None: ...

    @property
    def memory_reason(self) -> str | None: ...

    def read_only_refusal(self) -> MemoryFailure: ...

    def use_database(self, db: Engine, *, persisted: bool) -> None: ...

    def building_in_memory(self) -> AbstractContextManager[None]: ...

    def set_moved_roots(self, moved: dict[str, str]) -> None: ...

    def snapshot(self) -> Snapshot: ...

    def retrieval(self) -> RetrievalIndex: ...

    def generation(self) -> int: ...

    # -- collections ------------------------------------------------------------------------

    @property
    def collections_file(self) -> Path: ...

    def collections_file_missing(self) -> bool: ...

    def collections_by_name(self) -> dict[str, tables.CollectionRow]: ...

    def require_collection(self, name: str) -> tables.CollectionRow: ...

    def collection_root(self, name: str) -> Path: ...

    def absolute_path(self, path: Path) -> str: ...

    def add_collection(
        self,
        name: str,
        *,
        path: str | Path | None = None,
        policy: str = "local_only",
        policy_source: str = "explicit",
        _locked: bool = False,
    ) -> tables.CollectionRow: ...
