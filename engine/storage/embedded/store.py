"""The embedded store: fact files canonical (a folder per collection), collections.yaml
canonical for the collections, a SQLite index beside them rebuilt from both by reindex, the
home's lock file ordering every writer, and a journal of writes that did not finish."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.storage.embedded.collections_file import (
    read_collections_file,
    sync_collections_from_file,
    write_collections_file,
)
from engine.storage.embedded.cursor_secret import store_secret
from engine.storage.embedded.damaged_index import replace_unreadable_index
from engine.storage.embedded.factfiles import iter_fact_paths, parse_fact_file
from engine.storage.embedded.home import make_root, not_writable, remove_folders
from engine.storage.embedded.open_repairs import (
    index_lags_files,
    rebuild_at_open,
    repair_unless_busy,
)
from engine.storage.embedded.read_only import created_elsewhere, prepare_read_only
from engine.storage.fact_sink import FileSink
from engine.storage.mode import FactSink, Progress, Store, no_folder
from engine.storage.reads.records import row_from_file
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation, is_unreadable_sqlite

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine
    from engine.storage.reads.change_feed import ChangeFeed

_SINK = FileSink()


class EmbeddedStore(Store):
    name: ClassVar[Literal["embedded", "server"]] = "embedded"
    keeps_fact_files: ClassVar[bool] = True

    # -- opening ----------------------------------------------------------------------------

    def prepare(self, engine: StoreEngine) -> None:
        """The schema and collections; then repair what a crash or a damaged index left: an
        index missing or empty while fact files exist is rebuilt, an unreadable one set aside
        and rebuilt, unfinished writes settled (when no process holds the lock)."""
        if engine.read_only is not None:
            prepare_read_only(engine)
            return
        index = engine.sqlite_path
        if index is not None and not index.exists() and engine.collections_file.exists():
            # A damaged collections.yaml is refused before an index is made beside it.
            read_collections_file(engine.collections_file)
        try:
            why = "missing" if engine.prepare_schema() else "empty"
            if not engine.collections_by_name():
                # Made, but its first open stopped before its collections (a damaged
                # collections.yaml did so before it was refused up front): completed now.
                with engine.write_lock(settle=False):
                    engine.prepare_collections()
            engine.relocate_roots()
            lagging = index_lags_files(engine)
        except DBAPIError as exc:
            if not is_unreadable_sqlite(exc) or engine.sqlite_path is None:
                raise
            with engine.write_lock(settle=False):
                engine.note(replace_unreadable_index(engine, str(exc.orig)))
            engine.relocate_roots()
            why, lagging = "unreadable", index_lags_files(engine)
        if lagging:
            rebuild_at_open(engine, why)
        repair_unless_busy(engine)
        engine.report_open_notes()

    def why_read_only(
        self, engine: StoreEngine, index: Path | None, *, reading: bool
    ) -> str | None:
        """A home this process may not write (a read-only mount, another user's folder), or,
        for a reader, a brand-new home whose first writer is still making its index."""
        why = not_writable(engine.home, index)
        if why is None and reading and index is not None:
            why = created_elsewhere(engine.home, index, engine.home_lock)
        return why

    def collections_to_prepare(self, engine: StoreEngine) -> bool:
        """The home's collections.yaml is missing: it is written at open."""
        return engine.collections_file_missing()

    # -- the write lock and the write path -------------------------------------------------

    @contextmanager
    def locked_across_processes(self, engine: StoreEngine, wait: float) -> Iterator[None]:
        lock = engine.home_lock
        if not lock.acquire(wait):
            raise MemoryFailure(
                "MEMORY_WRITE_LEASE_BUSY",
                f"Another process held the store's write lock for {wait:g} s "
                f"({lock.path}). Retry shortly; if no gno-tui is running, "
                "the lock file can be removed.",
            )
        try:
            yield
        finally:
            lock.release()

    @property
    def sink(self) -> FactSink:
        return _SINK

    def forget_write(self, journal: Path, record_id: str) -> None:
        (journal / f"{record_id}.json").unlink(missing_ok=True)

    def has_unfinished_writes(self, journal: Path) -> bool:
        """Anything in the journal folder: an entry, or the temp file of one being written."""
        try:
            with os.scandir(journal) as entries:
                return any(True for _ in entries)
        except OSError:
            return False

    def unfinished_writes(self, journal: Path) -> dict[str, dict[str, Any]] | None:
        found: dict[str, dict[str, Any]] = {}
        if not journal.is_dir():
            return found
        for path in sorted(journal.glob("mem-*.json")):
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                entry = None
            found[path.stem] = entry if isinstance(entry, dict) else {"recordId": path.stem}
        return found

    def recover_interrupted_bulk_writes(
        self, engine: StoreEngine, *, skip_live: bool = True
    ) -> dict[str, int]:
        from engine.storage.bulk.recovery import recover_interrupted_writes

        return recover_interrupted_writes(engine, skip_live=skip_live)

    # -- collections -------------------------------------------------------------------------

    def add_collection(
        self,
        engine: StoreEngine,
        name: str,
        path: str | Path | None,
        policy: str,
        policy_source: str,
    ) -> tables.CollectionRow:
        """The root's `facts` folder is made and probed before the row is inserted, so an
        unusable root leaves no row and no folder."""
        root = Path(path).expanduser().resolve() if path else engine.home / "collections" / name
        with Session(engine.db, expire_on_commit=False) as session:
            if session.get(tables.CollectionRow, name) is not None:
                raise MemoryFailure(
                    "MEMORY_COLLECTION_INVALID",
                    f"Collection {name!r} already exists; pick another name or change its "
                    f"policy with `gno-tui collection set-policy {name} POLICY`.",
                )
            # A read-only home's index in memory lists its collections as they are.
            created = [] if engine.read_only is not None else make_root(root, name)
            try:
                row = tables.CollectionRow(
                    name=name,
                    root=str(root),
                    policy=policy,
                    policy_source=policy_source,
                    created_at=engine.now(),
                )
                session.add(row)
                bump_generation(session)
                session.commit()
                session.refresh(row)
                session.expunge(row)
            except BaseException:
                remove_folders(created)
                raise
        return row

    def default_collection_missing(self, engine: StoreEngine, name: str) -> None:
        return None  # collections.yaml lists it; opening made it

    def collection_folder(self, row: tables.CollectionRow) -> Path:
        if not row.root:  # a row without a folder (a server database's, copied here)
            raise no_folder(row.name)
        return Path(row.root)

    def collections_changed(self, engine: StoreEngine) -> None:
        """collections.yaml written from the rows (not in a read-only home)."""
        if engine.read_only is None:
            write_collections_file(engine)

    def collections_read(self, engine: StoreEngine) -> None:
        """A collections.yaml that does not parse is refused, not written over (it may hold
        what a person wrote by hand)."""
        if engine.collections_file.is_file():
            read_collections_file(engine.collections_file)

    def collections_synced(self, engine: StoreEngine) -> None:
        """collections.yaml is canonical, like the fact files: an index rebuilt from nothing
        gets its collections (and their policies) back from it."""
        sync_collections_from_file(engine)

    # -- what is kept beside the database --------------------------------------------------

    def index_file(self, engine: StoreEngine) -> Path | None:
        from engine.retrieval.persisted import index_file

        embedder = engine.embedder_status.embedder
        return index_file(engine.home, embedder.model_id if embedder is not None else None)

    def reindex(self, engine: StoreEngine, progress: Progress | None) -> dict[str, Any]:
        from engine.storage.embedded.reindex import reindex_from_files

        return reindex_from_files(engine, progress)

    def reindex_keeps(self) -> str:
        return (
            "it changes the index in one transaction, so the index is as it was, and the fact "
            "files are untouched"
        )

    def sweep_files(self, engine: StoreEngine) -> list[str]:
        from engine.retrieval import persisted

        own = self.index_file(engine)
        assert own is not None
        return [path.name for path in persisted.sweep(own.parent, keep=own)]

    # -- facts as files ---------------------------------------------------------------------

    def fact_file(self, engine: StoreEngine, collection: str, rel_path: str) -> Path | None:
        return engine.collection_root(collection) / rel_path

    def fact_files_on_disk(self, engine: StoreEngine) -> dict[str, Path]:
        return {
            path.stem: path
            for row in engine.collections_by_name().values()
            for path in iter_fact_paths(Path(row.root))
        }

    def copy_fact_file(self, engine: StoreEngine, row: tables.FactRow, target: Path) -> None:
        shutil.copy2(engine.collection_root(row.collection) / row.rel_path, target)

    def served_fact(
        self,
        engine: StoreEngine,
        collection: str,
        uri: str,
        rel_path: str,
        row: tables.FactRow | None,
    ) -> tuple[tables.FactRow, Callable[[], str]] | None:
        """The file is canonical: served from it, even when it is not indexed (its write's
        index half failed); None when it is not a fact file inside the collection's folder."""
        path = _inside(engine.collection_root(collection), row.rel_path if row else rel_path)
        if path is None:
            return None
        content = path.read_text(encoding="utf-8")
        if row is None:
            try:
                fact = parse_fact_file(content, where=str(path))
            except Exception:  # noqa: BLE001 - not a fact file: nothing to serve
                return None
            record = uri.rsplit("/", 1)[-1].removesuffix(".md")
            row = row_from_file(
                fact,
                collection=collection,
                uri=uri,
                rel_path=rel_path,
                docid=str(fact.workbench.get("docid") or "#" + record[4:12]),
            )
        return row, lambda: content

    def fact_location(self, engine: StoreEngine, collection: str, rel_path: str, uri: str) -> str:
        """The fact's file, shown from `<home>/` when it lives there."""
        path = engine.collection_root(collection) / rel_path
        home = engine.home
        return f"<home>/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)

    # -- what every process of the store must agree on --------------------------------------

    def cursor_secret(self, engine: StoreEngine) -> bytes:
        return store_secret(engine.home)

    def change_feed(self, engine: StoreEngine, start: int) -> ChangeFeed:
        from engine.storage.reads.change_feed import PollingFeed

        return PollingFeed(engine.generation, start)

    def backup_protected(self, engine: StoreEngine) -> list[Path]:
        return [engine.home, *(Path(row.root) for row in engine.collections_by_name().values())]

    def take_backup(self, engine: StoreEngine, target: Path) -> Mapping[str, Any]:
        from engine.storage.embedded.backup import take_embedded_backup

        return take_embedded_backup(engine, target)


def _inside(root: Path, rel_path: str) -> Path | None:
    """The fact file's resolved path, if it is a file inside the resolved `root`."""
    base = Path(root).resolve()
    try:
        resolved = (base / rel_path).resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return None
    if not resolved.is_relative_to(base) or not resolved.is_file():
        return None
    return resolved
