"""MemoryService: the one typed façade every surface (CLI, MCP server, workbench) uses.

It owns a home's MemoryEngine (storage) and offers the contract's verbs (remember, recall,
reindex, collections) directly, and the rest by domain: `facts` (browsing), `curation`,
`receipts`, `keyed`, `interop`, `access` (tokens, writes done once). Surfaces import
engine.facade and nothing else of the engine (a test scans their imports), so a verb added for
one surface is added here, once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, Unpack, cast

from engine.contract.normalize import check_utf8
from engine.facade.factory import EngineOptions, open_engine, open_recall_store

if TYPE_CHECKING:
    from engine.contract.results import (
        Matching,
        Ob1RecallResponse,
        ReadOnlyReason,
        RecallResult,
        ReindexReport,
        RememberResult,
        StoreStatus,
    )
    from engine.facade.access import AccessApi
    from engine.facade.curation import CurationApi
    from engine.facade.facts import FactsApi
    from engine.facade.interop import InteropApi
    from engine.facade.keyed import KeyedApi
    from engine.facade.receipts import ReceiptsApi
    from engine.memory.recall import RecallRequest
    from engine.memory.remember import RememberRequest
    from engine.retrieval.embeddings import EmbedderStatus
    from engine.retrieval.ranking import ScoreParts
    from engine.storage.embedded.sqlite_reader import SqliteRecallStore
    from engine.storage.group_commit import WriteBatch
    from engine.storage.reads import RecallStore
    from engine.storage.reads.change_feed import ChangeFeed
    from engine.storage.schema import tables
    from engine.storage.store import MemoryEngine

# Each verb imports what it runs (recall, remember, a namespace, OB1 shapes, reindex, group
# commit): a cold CLI call loads the path of its one verb and nothing else.


class FactPlace(Protocol):
    """What `fact_location` reads of a fact (a FactRow has it)."""

    @property
    def uri(self) -> str: ...
    @property
    def collection(self) -> str: ...
    @property
    def rel_path(self) -> str: ...


@dataclass(frozen=True)
class ExplainedRecall:
    """A recall result (seed 001, exactly) and, per returned recordId, its score's parts."""

    result: RecallResult
    parts: dict[str, ScoreParts]


class MemoryService:
    def __init__(self, engine: MemoryEngine) -> None:
        # The storage beneath, for engine-internal callers (tests, benchmarks, the demo
        # seeder's bulk path); surfaces use the verbs.
        self.engine = engine

    # -- the namespaces, each made on first use ---------------------------------------------

    @cached_property
    def facts(self) -> FactsApi:
        from engine.facade.facts import FactsApi

        return FactsApi(self.engine)

    @cached_property
    def curation(self) -> CurationApi:
        from engine.facade.curation import CurationApi

        return CurationApi(self.engine)

    @cached_property
    def receipts(self) -> ReceiptsApi:
        from engine.facade.receipts import ReceiptsApi

        return ReceiptsApi(self.engine)

    @cached_property
    def keyed(self) -> KeyedApi:
        from engine.facade.keyed import KeyedApi

        return KeyedApi(self.engine)

    @cached_property
    def access(self) -> AccessApi:
        from engine.facade.access import AccessApi

        return AccessApi(self.engine)

    @cached_property
    def interop(self) -> InteropApi:
        from engine.facade.interop import InteropApi

        return InteropApi(self.engine)

    # -- the store --------------------------------------------------------------------------

    @property
    def home(self) -> Path:
        return self.engine.home

    @property
    def mode(self) -> Literal["embedded", "server"]:
        """How the store is kept: "embedded" (fact files canonical, a SQLite index beside
        them) or "server" (a PostgreSQL database canonical)."""
        return self.engine.store.name

    @property
    def keeps_fact_files(self) -> bool:
        """Facts are files a person can open, and collections folders (the embedded store);
        otherwise a fact is a row and a collection has no folder."""
        return self.engine.store.keeps_fact_files

    def fact_location(self, row: FactPlace) -> str:
        """Where a person finds a fact: its file, shown from `<home>/` when it lives there;
        its uri where it is a row."""
        return self.engine.store.fact_location(
            self.engine, row.collection, row.rel_path, str(row.uri)
        )

    def fact_file(self, row: FactPlace) -> Path | None:
        """The fact's file, when the store keeps one and it is there."""
        path = self.engine.store.fact_file(self.engine, row.collection, row.rel_path)
        return path if path is not None and path.is_file() else None

    def check_writable(self) -> None:
        """MEMORY_HOME_READ_ONLY when this process may not write the home (a read-only mount,
        another user's folder): for a surface that touches the home's folders itself before
        the engine would refuse the write."""
        if self.engine.read_only is not None:
            raise self.engine.read_only_refusal()

    def now(self) -> datetime:
        """The injected clock's time (every timestamp the store writes comes from it)."""
        return self.engine.now()

    def generation(self) -> int:
        """A counter every write moves: a cheap way to see that another process wrote."""
        return self.engine.generation()

    def changes(self, since: int | None = None) -> ChangeFeed:
        """A feed whose `wait(timeout)` returns the new generation when any process wrote
        (LISTEN/NOTIFY on PostgreSQL, the counter read each second on SQLite), reporting
        generations after `since` (None: now). One thread waits on it; `close()`, from any
        thread, ends a wait at once. engine/storage/reads/change_feed.py says how each works."""
        # Passing the generation a surface showed means a write made between that read and
        # this call is reported by the first wait, not lost.
        start = self.engine.generation() if since is None else since
        return self.engine.store.change_feed(self.engine, start)

    def surface_setting(self, name: str) -> str | None:
        """A surface's own setting kept in this home between runs (the workbench's Library
        filter); no memory: never recalled, exported or reindexed."""
        from engine.memory import surface_state

        return surface_state.read_setting(self.engine.home, name)

    def set_surface_setting(self, name: str, value: str | None) -> None:
        """Keep (None: forget) a surface's setting in this home; a home that cannot be written
        keeps nothing, silently (the setting is a convenience, not memory)."""
        from engine.memory import surface_state

        surface_state.write_setting(self.engine.home, name, value)

    @property
    def embedder_status(self) -> EmbedderStatus:
        return self.engine.embedder_status

    def status(self) -> StoreStatus:
        """Where this store lives and ranks (`gno-tui status`): the database's kind, the
        retrieval backend (`postgres` inside the database, or `in-memory`) with the legs it
        has, and the dedup matching in force; `readOnly` when this process may not write the
        home (why: `readOnlyReason`), and `notes` of what opening it did. No URL: it may carry
        a password."""
        index = self.engine.retrieval()
        read_only = self.engine.read_only
        reason: ReadOnlyReason = {"readOnlyReason": read_only} if read_only is not None else {}
        status: StoreStatus = {
            "home": str(self.engine.home),
            "database": self.engine.db.dialect.name,
            "mode": self.mode,
            "readOnly": read_only is not None,
            **reason,
            "notes": list(self.engine.notes),
            "retrieval": {
                "backend": self.engine.retrieval_backend,
                "capabilities": sorted(index.capabilities),
            },
            "matching": self.matching(),
        }
        return status

    def matching(self) -> Matching:
        """The dedup matching in force: mode, threshold, and why semantic is unavailable."""
        from engine.retrieval.matching import matching_block

        status = self.engine.embedder_status
        # matching_block builds the seed's `matching` object (typed dict[str, Any] there).
        return cast("Matching", matching_block(status.embedder, status.unavailable_reason))

    @property
    def notes(self) -> list[str]:
        """What opening the home (and settling writes that did not finish) repaired, one
        sentence each: an index rebuilt from the fact files, a damaged one set aside, a
        crashed write's file indexed or left out. Also logged as warnings (stderr)."""
        return list(self.engine.notes)

    def close(self) -> None:
        self.engine.db.dispose()

    # -- the contract's verbs ---------------------------------------------------------------

    def remember(
        self, request: RememberRequest, *, hold_writes: bool = False, origin: str = "cli"
    ) -> RememberResult:
        """A memory-remember@1.0 result. `hold_writes` (a propose-only surface) queues an add
        or supersede for a person instead of writing it."""
        from engine.memory.remember import remember

        # The engine builds the result as dict[str, Any] and validates it against the seed.
        result = remember(self.engine, request, hold_writes=hold_writes, origin=origin)
        return cast("RememberResult", result)

    def embed_ahead(self, text: object) -> None:
        """Embed a fact's text before its write takes the write lock, for the write to use
        (the MCP write lane does this for the writes waiting). Best effort: a text the write
        will refuse, or no model, does nothing here."""
        from engine.contract.errors import MemoryFailure
        from engine.contract.normalize import clean_text

        embedder = self.engine.embedder_status.embedder
        if embedder is None or not isinstance(text, str):
            return
        try:
            stored = clean_text(text)
        except MemoryFailure:
            return
        self.engine.vectors_ahead.put(embedder, stored)

    @contextmanager
    def write_batch(self) -> Iterator[WriteBatch]:
        """A group commit: the `remember` adds and supersedes called inside (on this thread)
        share one hold of the write lock and one index transaction, committed when the block
        ends; their results are true (durable) only after it. No other write may run inside.
        engine/storage/group_commit.py says what a crash or a failed commit does."""
        from engine.storage.group_commit import write_batch

        with write_batch(self.engine) as batch:
            yield batch

    def recall(self, request: RecallRequest) -> RecallResult:
        """A memory-recall@1.0 result; its receipt is stored."""
        from engine.memory.recall import recall_explained

        # Built as dict[str, Any] and validated against seed 001 by the engine.
        return cast("RecallResult", recall_explained(self.engine, request)[0])

    def recall_explained(self, request: RecallRequest) -> ExplainedRecall:
        from engine.memory.recall import recall_explained

        result, parts = recall_explained(self.engine, request)
        return ExplainedRecall(cast("RecallResult", result), parts)  # validated as recall()

    def recall_ob1(self, request: RecallRequest) -> Ob1RecallResponse:
        """The same recall shaped as an OB1 recall response."""
        from engine.interop.ob1_recall import recall_ob1

        # Built as dict[str, Any] and validated against seed 002 by the engine.
        return cast("Ob1RecallResponse", recall_ob1(self.engine, request))

    def recall_as_ob1(self, result: RecallResult) -> Ob1RecallResponse:
        """A recall result already issued (its receipt stored: no second recall) shaped as an
        OB1 recall response, not validated (the workbench shows it beside its schema check)."""
        from engine.interop.ob1 import ob1_memory, ob1_response

        memories = []
        for fact in result["facts"]:
            row = self.facts.get(fact["recordId"])
            memories.append(ob1_memory(fact, collection=row.collection, workbench=row.workbench))
        # ob1_response builds it as dict[str, Any], the shape recall_ob1 validates.
        return cast("Ob1RecallResponse", ob1_response(result["receipt"]["digest"], memories))

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> ReindexReport:
        """Make the index agree with the fact files; `progress(done, total)` per file."""
        from engine.storage.reindex import reindex

        # reindex builds its report as dict[str, Any]; ReindexReport names its keys.
        return cast("ReindexReport", reindex(self.engine, progress))

    # -- collections ------------------------------------------------------------------------

    def collections(self) -> list[tables.CollectionRow]:
        return sorted(self.engine.collections_by_name().values(), key=lambda row: row.name)

    def collection_root(self, name: str) -> Path:
        return self.engine.collection_root(name)

    def add_collection(
        self, name: str, *, path: str | Path | None = None, policy: str = "local_only"
    ) -> tables.CollectionRow:
        check_utf8(name, "The collection name")
        if path is not None:
            check_utf8(str(path), "The collection path")
        return self.engine.add_collection(name, path=path, policy=policy)

    def set_policy(self, name: str, policy: str, *, actor: str) -> tables.CollectionRow:
        check_utf8(name, "The collection name")
        check_utf8(policy, "The policy")
        return self.engine.set_policy(name, policy, actor=actor)

    def collection(self, name: str) -> tables.CollectionRow:
        """The collection `name`, or MEMORY_COLLECTION_NOT_FOUND (saying how to create one)."""
        return self.engine.require_collection(check_utf8(name, "The collection name"))

    @contextmanager
    def clock_override(
        self, clock: Callable[[], datetime], *, ids: Callable[[], str] | None = None
    ) -> Iterator[None]:
        """Within the block, times come from `clock` and new record ids from `ids` (when
        given) instead of what the service was opened with: the demo seeder dates its facts
        in the past and numbers them, so that a fixed clock gives the same store every run."""
        engine = self.engine
        saved = engine._clock, engine._ids
        engine._clock = clock
        if ids is not None:
            engine._ids = ids
        try:
            yield
        finally:
            engine._clock, engine._ids = saved


def open_service(**options: Unpack[EngineOptions]) -> MemoryService:
    """The façade over a home: --home, else $GNO_TUI_HOME, else the user data folder; --db,
    else $GNO_TUI_DB, else SQLite in the home; the model folder, else the bundled model.
    `clock` and `ids` (the record-id generator) are injectable for tests and pictures."""
    return MemoryService(open_engine(**options))


class RecallService:
    """The verbs of a call that only recalls or proposes (a cold `gno-tui recall --json` or
    `remember` without --add): answered as MemoryService answers them, on the store
    `open_recall_service` opened, which on a sound SQLite home loads no ORM."""

    def __init__(self, store: RecallStore) -> None:
        self._store = store

    def recall(self, request: RecallRequest) -> RecallResult:
        """A memory-recall@1.0 result; its receipt is stored."""
        from engine.memory.recall import recall_explained

        # Built as dict[str, Any] and validated against seed 001 by the engine.
        return cast("RecallResult", recall_explained(self._store, request)[0])

    def propose(self, request: RememberRequest) -> RememberResult:
        """A memory-remember@1.0 result for decision propose (MEMORY_INTERNAL for another)."""
        from engine.memory.remember import propose

        # Built as dict[str, Any] and validated against seed 000 by the engine.
        return cast("RememberResult", propose(self._store, request))

    def close(self) -> None:
        """Release the store's database connections (a MemoryEngine's pool, or sqlite3's)."""
        # The one of the two stores open_recall_store opens (RecallStore names neither's close).
        store = cast("MemoryEngine | SqliteRecallStore", self._store)
        if hasattr(store, "db"):
            store.db.dispose()
        else:
            store.close()


def open_recall_service(**options: Unpack[EngineOptions]) -> RecallService:
    """A RecallService over the home (the options of open_service): the sqlite3 store when the
    home's SQLite index needs nothing done at open (engine/storage/embedded/sqlite_reader.py), else
    the full engine."""
    return RecallService(open_recall_store(**options))
