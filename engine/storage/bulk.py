"""Many adds at once (imports, benchmarks, the demo): the same files and rows as `remember`
with decision add, written under one hold of the write lock, all or nothing. Exact duplicates
(same text, an intersecting scope, same collection, current) are skipped, as a single add would
answer `existing`.

The write phase (docs/decisions.md, "Import safety"):

1. each fact is checked and its file rendered, and the file written into a staging folder
   `<collection root>/.import-<id>/facts/<day>/` (same filesystem as its final place, and
   outside `facts/`, so reindex never sees it) as soon as it is planned, by a child process
   for a large write (engine/storage/bulk_staging.py, engine/storage/file_stager.py); a bad
   fact later in the batch stops the write and rolls the staged files back;
2. the staged files are made durable (one syncfs for the lot, else an fsync per file);
3. every row, its scopes, its vector and the supersede links (inserted meanwhile, on a thread
   of their own that starts with the first thousand facts planned:
   engine/storage/bulk_rows.py), and whatever the caller writes with them (an import's
   proposals), are committed in one transaction;
4. the staged files are renamed into `facts/<day>/` (a day folder that is new, the staged one
   renamed whole) and the staging folder is removed.

A process killed in 1 to 3 leaves no row and no visible file; one killed in 4 leaves committed
rows whose files wait in the staging folder. `recover_interrupted_writes` settles both, file by
file: a staged file whose row exists is moved into place (rolled forward), any other is deleted
(rolled back). It runs at the start of every bulk write, and is meant for reindex and the
store's open as well. It also removes the `.tmp-*` files a crash inside `write_atomically`
left behind."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.contract.curation_fields import curation_defaults
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import (
    MAX_TEXT_BYTES,
    check_identity,
    clean_text,
    content_hash,
    fact_uri,
    iso_utc,
    normalize_scopes,
)
from engine.storage import tables
from engine.storage.bulk_recovery import recover_interrupted_writes
from engine.storage.bulk_rows import BATCH, PlannedFact, RowInserts
from engine.storage.bulk_staging import StagedFiles
from engine.storage.crash_hook import CrashPoint, crash_at, crash_points
from engine.storage.database import bump_generation
from engine.storage.factfiles import (
    KEYED_MAX_TEXT_BYTES,
    MAX_FACT_FILE_BYTES,
    FactFile,
    FieldError,
    check_gno_uris,
    check_time,
    check_workbench,
)
from engine.storage.records import allocate_docid, row_fields

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

# Facts planned between two progress reports (a report per fact cost a terminal bar more than
# the writes).
PROGRESS_EVERY = 250


@dataclass
class BulkFact:
    text: str
    scopes: Sequence[str]
    caller: str
    session: str
    collection: str = "memory"
    source: str | None = None
    created_by: str = "agent"
    workbench: dict[str, Any] = field(default_factory=dict)
    # Kept as given when restoring from an export; otherwise new ones are made.
    record_id: str | None = None
    created_at: str | None = None
    docid: str | None = None
    supersedes: list[str] = field(default_factory=list)
    # Superseded in its source: restored as history, never taken for a duplicate.
    history: bool = False
    # The fact's vector block (engine/retrieval/embeddings.embed_facts), when the caller has
    # embedded the text already (an import's dedup): stored as it is, not computed again.
    block: Any = None
    # The content hash of `text`, when the caller has taken it already (an import's dedup).
    content_hash: str | None = None


@dataclass
class BulkReport:
    added: list[str] = field(default_factory=list)  # record ids, in input order
    skipped: list[int] = field(default_factory=list)  # input positions of exact duplicates
    # The rows written, as `added` orders them: the facts-table fields by attribute name.
    rows: list[Any] = field(default_factory=list)


def _text_limit(fact: BulkFact) -> int:
    """A keyed-API fact (restored from an export) may be as long as the keyed API allows."""
    return KEYED_MAX_TEXT_BYTES if "keyed" in fact.workbench else MAX_TEXT_BYTES


def _refuse(position: int, why: str) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_IMPORT_INVALID", f"Item {position + 1} of the batch: {why}. Nothing was written."
    )


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a bulk write: the write makes a few objects
    per fact (rows, files, vectors) and none of them cycles, but each full collection walks
    every live object, and with 100k facts in hand those walks were a quarter of an import."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# More rows that stand or fall with the facts (an import's proposals). Called with the report
# (what is added, what skipped) while the facts' rows are being inserted, it prepares them and
# returns what writes them, which runs in the transaction that commits the facts.
AlsoWrite = Callable[[BulkReport], Callable[[Session], None]]


def add_many(
    engine: MemoryEngine,
    facts: Sequence[BulkFact],
    *,
    progress: Callable[[int, int], None] | None = None,
    durable: bool = True,
    also: AlsoWrite | None = None,
) -> BulkReport:
    """Validate everything first (one bad fact writes nothing), then write all or nothing.

    `durable=False` skips the fsyncs, for throwaway stores (benchmarks, the demo). `also`
    writes more rows in the same transaction (committed even when no fact is added)."""
    with collector_paused():
        return _add_many(engine, facts, progress=progress, durable=durable, also=also)


def _add_many(
    engine: MemoryEngine,
    facts: Sequence[BulkFact],
    *,
    progress: Callable[[int, int], None] | None,
    durable: bool,
    also: AlsoWrite | None,
) -> BulkReport:
    checked = [
        (
            clean_text(f.text, max_bytes=_text_limit(f)),
            normalize_scopes(f.scopes),
            *check_identity(f.caller, f.session),
            f,
        )
        for f in facts
    ]
    # No folders in the server mode: the rows are the facts (engine/storage/fact_sink.py).
    roots = {
        name: engine.collection_root(name) if engine.files_canonical else Path()
        # Each collection looked up once: one query per fact was a fifth of a 100k import.
        for name in {engine.require_collection(name).name for name in {f.collection for f in facts}}
    }
    crash = crash_points()
    report = BulkReport()
    with engine.write_lock():
        recover_interrupted_writes(engine, skip_live=False)
        seen = _current_hashes(engine)
        with Session(engine.db) as db:
            taken = set(db.scalars(select(tables.FactRow.docid)))
            known = set(db.scalars(select(tables.FactRow.record_id)))
        planned: list[PlannedFact] = []
        # The rows' inserts start with the first batch planned (engine/storage/bulk_rows.py),
        # the files' staging with the first fact (engine/storage/bulk_staging.py).
        # The crash hook's `staged` points count files where there are files, else rows.
        files = StagedFiles(engine, len(checked), crash) if engine.files_canonical else None
        inserts = _Feed(engine, crash if files is None else None)
        try:
            _plan(engine, checked, seen, taken, known, roots, planned, report, inserts, files,
                  progress)  # fmt: skip
        except BaseException:
            inserts.abandon()
            if files is not None:
                files.abandon()
            raise
        if planned:
            then = partial(also, report) if also is not None else None
            _write_all(planned, files, durable=durable, crash=crash, also=then,
                       inserts=inserts.done())  # fmt: skip
        elif also is not None:
            write = also(report)
            with Session(engine.db, expire_on_commit=False) as db:
                write(db)
                bump_generation(db)
                db.commit()
    return report


class _Feed:
    """The rows' inserts of a bulk write, fed a batch at a time as the write plans its facts;
    started only once there is a fact to write."""

    def __init__(self, engine: MemoryEngine, crash: CrashPoint) -> None:
        self._engine = engine
        self._crash = crash
        self._batch: list[PlannedFact] = []
        self.inserts: RowInserts | None = None

    def add(self, item: PlannedFact) -> None:
        self._batch.append(item)
        if len(self._batch) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            if self.inserts is None:
                self.inserts = RowInserts(self._engine, crash=self._crash)
            self.inserts.feed(self._batch)
            self._batch = []

    def done(self) -> RowInserts:
        """Every fact is fed: the inserts, to commit."""
        self._flush()
        assert self.inserts is not None  # only called when a fact was planned
        self.inserts.fed()
        return self.inserts

    def abandon(self) -> None:
        if self.inserts is not None:
            self.inserts.abandon()


def _plan(
    engine: MemoryEngine,
    checked: list[tuple[str, list[str], str, str, BulkFact]],
    seen: dict[tuple[str, str], set[str]],
    taken: set[str],
    known: set[str],
    roots: dict[str, Path],
    planned: list[PlannedFact],
    report: BulkReport,
    inserts: _Feed,
    files: StagedFiles | None,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Each fact's file and row, checked, and handed to the inserts and the staging; exact
    duplicates skipped (into `report`). `progress` counts the facts planned or skipped."""
    on_disk: dict[Path, set[str]] = {}  # fact folder -> the names in it, listed once
    day_folders: dict[tuple[Path, str], Path] = {}
    for position, (text, scopes, caller, session, fact) in enumerate(checked):
        if progress and position % PROGRESS_EVERY == 0:
            progress(position, len(checked))
        digest = fact.content_hash or content_hash(text)
        if not fact.history:
            key_scopes = seen.setdefault((fact.collection, digest), set())
            if key_scopes & set(scopes):
                report.skipped.append(position)
                continue
            key_scopes.update(scopes)
        try:
            # A time of the engine's clock is canonical already; a given one is checked.
            created_at = (
                check_time(fact.created_at, "createdAt")
                if fact.created_at
                else iso_utc(engine.now())
            )
            supersedes = check_gno_uris(list(fact.supersedes), "supersedes")
            workbench = check_workbench(fact.workbench)
        except FieldError as exc:
            raise _refuse(position, str(exc)) from exc
        record_id = fact.record_id or engine.new_record_id()
        if record_id in known:
            raise _refuse(position, f"record id {record_id} is already in use")
        known.add(record_id)
        docid = (
            fact.docid
            if fact.docid and fact.docid not in taken
            else allocate_docid(None, record_id=record_id, taken=taken)
        )
        taken.add(docid)
        file = FactFile(
            record_id=record_id,
            scopes=scopes,
            caller=caller,
            session=session,
            created_at=created_at,
            content_hash=digest,
            text=text,
            source=fact.source,
            supersedes=supersedes,
            workbench={"docid": docid, **curation_defaults(fact.created_by), **workbench},
        )
        content = file.render().encode("utf-8")
        if len(content) > MAX_FACT_FILE_BYTES:
            raise _refuse(position, "its fact file would be larger than 1 MiB")
        day = created_at[:10]
        rel_path = f"facts/{day}/{record_id}.md"
        root = roots[fact.collection]
        in_place = engine.files_canonical and f"{record_id}.md" in _names_in(
            on_disk, _day_folder(day_folders, root, day)
        )
        if in_place:
            raise _refuse(
                position,
                f"{root / rel_path} exists but is not in the index; run `gno-tui reindex`",
            )
        row = SimpleNamespace(
            **row_fields(
                file,
                collection=fact.collection,
                uri=fact_uri(fact.collection, day, record_id),
                rel_path=rel_path,
                docid=docid,
            )
        )
        item = PlannedFact(row, root, content, fact.block)
        planned.append(item)
        inserts.add(item)
        if files is not None:
            files.stage(item)
        report.added.append(record_id)
        report.rows.append(row)
    if progress:
        progress(len(checked), len(checked))


def _day_folder(folders: dict[tuple[Path, str], Path], root: Path, day: str) -> Path:
    """root/facts/day, made once per bulk write (joining paths was 3 % of a 100k import)."""
    folder = folders.get((root, day))
    if folder is None:
        folder = folders[root, day] = root / "facts" / day
    return folder


def _names_in(listed: dict[Path, set[str]], folder: Path) -> set[str]:
    """The entries of `folder` (none if it does not exist), listed once per bulk write: no
    other writer adds fact files while it holds the write lock."""
    if folder not in listed:
        try:
            listed[folder] = {entry.name for entry in folder.iterdir()}
        except FileNotFoundError:
            listed[folder] = set()
    return listed[folder]


def _write_all(
    planned: list[PlannedFact],
    files: StagedFiles | None,
    *,
    durable: bool,
    crash: CrashPoint,
    also: Callable[[], Callable[[Session], None]] | None,
    inserts: RowInserts,
) -> None:
    if files is None:  # server mode: the one transaction is the whole write
        inserts.commit(also)
        crash_at(crash, "committed")
        return
    committed = False
    try:
        try:
            files.finish(planned, durable=durable)
            inserts.commit(also)
            committed = True
        finally:
            if not committed:  # nothing is visible yet; settle the staging folders if we can
                inserts.abandon()
                files.abandon()
        crash_at(crash, "committed")
        files.publish(durable=durable)
    finally:
        files.close()  # the stager's pipes, or its open folders when it ran here
    files.remove()


def _current_hashes(engine: MemoryEngine) -> dict[tuple[str, str], set[str]]:
    with Session(engine.db) as session:
        rows = session.execute(
            select(tables.FactRow.collection, tables.FactRow.content_hash, tables.FactRow.scopes)
            .where(tables.FactRow.superseded_by.is_(None))
            .where(tables.FactRow.retired_at.is_(None))
        ).all()
    seen: dict[tuple[str, str], set[str]] = {}
    for collection, digest, scopes in rows:
        seen.setdefault((collection, digest), set()).update(scopes)
    return seen
