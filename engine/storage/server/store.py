"""The server store: a PostgreSQL database is canonical and shared by homes on many machines.
A fact is a row (its file exists only rendered from it), a collection is a row without a
folder, the write lock is the database's advisory lock, and the change feed is LISTEN/NOTIFY;
a home holds only this machine's settings (engine/storage/server/parts.py has the parts)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from engine.contract.normalize import iso_utc
from engine.storage.embedded.factfiles import write_atomically
from engine.storage.fact_sink import DatabaseSink, fact_file_of
from engine.storage.mode import FactSink, Progress, Store, no_folder
from engine.storage.schema import tables
from engine.storage.server.parts import (
    add_database_collection,
    advisory_write_lock,
    database_cursor_secret,
    rebuild_derived,
)

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine
    from engine.storage.reads.change_feed import ChangeFeed

_SINK = DatabaseSink()
_NO_BULK_RECOVERY = {"rolledBack": 0, "rolledForward": 0, "tempFiles": 0}


class ServerStore(Store):
    name: ClassVar[Literal["embedded", "server"]] = "server"
    keeps_fact_files: ClassVar[bool] = False

    def prepare(self, engine: StoreEngine) -> None:
        """The database is canonical: nothing in the home needs repairing."""
        engine.prepare_schema()

    def why_read_only(
        self, engine: StoreEngine, index: Path | None, *, reading: bool
    ) -> str | None:
        return None  # the database's own grants decide, per statement

    def collections_to_prepare(self, engine: StoreEngine) -> bool:
        """The default collection is made with the schema, in the same hold of the lock; a
        database that lacks it anyway (a crash between the two) gets it at first use
        (default_collection_missing): an up-to-date open stays one query."""
        return False

    def locked_across_processes(
        self, engine: StoreEngine, wait: float
    ) -> AbstractContextManager[None]:
        return advisory_write_lock(engine.db, wait)

    @property
    def sink(self) -> FactSink:
        return _SINK

    def forget_write(self, journal: Path, record_id: str) -> None:
        return None  # nothing is journalled: the row is the fact

    def has_unfinished_writes(self, journal: Path) -> bool:
        return False

    def unfinished_writes(self, journal: Path) -> dict[str, dict[str, Any]] | None:
        return None

    def recover_interrupted_bulk_writes(
        self, engine: StoreEngine, *, skip_live: bool = True
    ) -> dict[str, int]:
        return dict(_NO_BULK_RECOVERY)  # no staged files, no folders to look in

    def add_collection(
        self,
        engine: StoreEngine,
        name: str,
        path: str | Path | None,
        policy: str,
        policy_source: str,
    ) -> tables.CollectionRow:
        return add_database_collection(engine, name, path, policy, policy_source)

    def default_collection_missing(self, engine: StoreEngine, name: str) -> None:
        """A server database a crash left without it: made at first use, once."""
        with engine.write_lock():
            if name not in engine.collections_by_name():
                engine.add_collection(
                    name, policy="local_only", policy_source="config_default", _locked=True
                )

    def collection_folder(self, row: tables.CollectionRow) -> Path:
        raise no_folder(row.name)

    def collections_changed(self, engine: StoreEngine) -> None:
        return None  # the rows are all there is

    def collections_read(self, engine: StoreEngine) -> None:
        return None

    def collections_synced(self, engine: StoreEngine) -> None:
        return None

    def index_file(self, engine: StoreEngine) -> Path | None:
        return None  # the search tables live in the database

    def reindex(self, engine: StoreEngine, progress: Progress | None) -> dict[str, Any]:
        """The rows are the facts: derived data only."""
        with engine.write_lock():
            return rebuild_derived(engine, progress)

    def reindex_keeps(self) -> str:
        return "the facts are untouched (in the server mode it rebuilds derived data only)"

    def sweep_files(self, engine: StoreEngine) -> list[str]:
        return []

    def fact_file(self, engine: StoreEngine, collection: str, rel_path: str) -> Path | None:
        return None

    def fact_files_on_disk(self, engine: StoreEngine) -> dict[str, Path]:
        return {}

    def copy_fact_file(self, engine: StoreEngine, row: tables.FactRow, target: Path) -> None:
        """A mirror: the file the embedded mode would have written, rendered from the row."""
        write_atomically(target, fact_file_of(row).render())

    def served_fact(
        self,
        engine: StoreEngine,
        collection: str,
        uri: str,
        rel_path: str,
        row: tables.FactRow | None,
    ) -> tuple[tables.FactRow, Callable[[], str]] | None:
        """The row is the fact; its file is rendered (when it is asked for)."""
        if row is None:
            return None
        found = row
        return found, lambda: fact_file_of(found).render()

    def fact_location(self, engine: StoreEngine, collection: str, rel_path: str, uri: str) -> str:
        return uri

    def cursor_secret(self, engine: StoreEngine) -> bytes:
        """The database's, so a cursor cut by one home verifies on every other home of it."""
        return database_cursor_secret(engine)

    def change_feed(self, engine: StoreEngine, start: int) -> ChangeFeed:
        from engine.storage.server.listen import ListenFeed

        return ListenFeed(engine.db, start)

    def backup_protected(self, engine: StoreEngine) -> list[Path]:
        return []

    def take_backup(self, engine: StoreEngine, target: Path) -> Mapping[str, Any]:
        from engine.storage.server.backup import take_server_backup

        return take_server_backup(engine.db, target, taken_at=iso_utc(engine.now()))
