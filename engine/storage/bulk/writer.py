"""A bulk write fed one fact at a time (engine/storage/bulk/__init__.py says how it writes): the
facts are checked, staged and handed to the inserts as they come, so that what it keeps per fact is
only what the next facts are checked against."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract import visibility
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
from engine.storage.bulk.hashes import HeldRows, StoreHashes
from engine.storage.bulk.rows import BATCH, PlannedFact, RowInserts
from engine.storage.bulk.staging import StagedFiles
from engine.storage.crash_hook import CrashPoint, crash_at, crash_points
from engine.storage.embedded.factfiles import (
    KEYED_MAX_TEXT_BYTES,
    MAX_FACT_FILE_BYTES,
    FactFile,
    FieldError,
    check_gno_uris,
    check_time,
    check_workbench,
)
from engine.storage.reads.records import allocate_docid, row_fields
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine


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
Checked = tuple[str, list[str], str, str]  # text, scopes, caller, session: validated


def checked_fact(fact: BulkFact) -> Checked:
    """A fact's text, scopes, caller and session, validated as remember validates them."""
    return (
        clean_text(fact.text, max_bytes=_text_limit(fact)),
        normalize_scopes(fact.scopes),
        *check_identity(fact.caller, fact.session),
    )


class BulkWriter:
    """A bulk write fed one fact at a time, all or nothing: under one hold of the write lock
    (taken on entering), each fact `add`ed is checked, its file staged and its row handed to
    the inserts as it comes; `commit` makes the lot durable and visible; leaving without a
    commit (or with an error) takes everything back. Nothing is kept per fact once it is
    handed on but what the exact-duplicate check and docid allocation need (and the record
    ids, with `collect`), so an import's memory does not grow with its facts' text."""

    def __init__(
        self, engine: StoreEngine, *, expected: int, durable: bool = True, collect: bool = True
    ) -> None:
        self._engine = engine
        self._expected = expected  # at most this many facts (the stager is chosen by it)
        self._durable = durable
        self._collect = collect
        self.report = BulkReport()
        self._position = 0
        self._planned = 0
        self._roots: dict[str, Path] = {}
        self._on_disk: dict[Path, set[str]] = {}  # fact folder -> the names in it, listed once
        self._day_folders: dict[tuple[Path, str], Path] = {}
        self._stack = ExitStack()
        self._open = False

    def __enter__(self) -> BulkWriter:
        engine = self._engine
        self._stack.enter_context(collector_paused())
        self._stack.enter_context(engine.write_lock())
        try:
            engine.store.recover_interrupted_bulk_writes(engine, skip_live=False)
            self._seen = StoreHashes(partial(_current_holders, engine))
            with Session(engine.db) as db:
                self._taken = set(db.scalars(select(col(tables.FactRow.docid))))
                self._known = set(db.scalars(select(col(tables.FactRow.record_id))))
            self._crash = crash_points()
            # The rows' inserts start with the first batch planned (engine/storage/bulk/rows.py),
            # the files' staging with the first fact (engine/storage/bulk/staging.py). The
            # crash hook's `staged` points count files where there are files, else rows.
            self._files = (  # where the store keeps facts as files; else the rows are the facts
                StagedFiles(engine, self._expected, self._crash)
                if engine.store.keeps_fact_files
                else None
            )
            self._inserts = _Feed(engine, self._crash if self._files is None else None)
        except BaseException:
            self._stack.close()
            raise
        self._open = True
        return self

    def __exit__(self, *_exc: object) -> None:
        try:
            if self._open:  # not committed: nothing of it stays
                self._open = False
                self._inserts.abandon()
                if self._files is not None:
                    self._files.abandon()
        finally:
            self._stack.close()

    def _root(self, name: str) -> Path:
        root = self._roots.get(name)
        if root is None:
            # No folders where no file is staged: the rows are the facts (fact_sink.py).
            root = self._roots[name] = (
                self._engine.collection_root(self._engine.require_collection(name).name)
                if self._files is not None
                else Path()
            )
        return root

    def add(self, fact: BulkFact, *, checked: Checked | None = None) -> str | None:
        """Write one more fact (validated here unless `checked` says how it validated); its
        record id, or None when it is skipped as an exact duplicate."""
        position = self._position
        self._position += 1
        text, scopes, caller, session = checked or checked_fact(fact)
        root = self._root(fact.collection)
        digest = fact.content_hash or content_hash(text)
        if not fact.history:
            if self._seen.shares(fact.collection, digest, scopes):
                if self._collect:
                    self.report.skipped.append(position)
                return None
            self._seen.add(fact.collection, digest, scopes)
        try:
            # A time of the engine's clock is canonical already; a given one is checked.
            created_at = (
                check_time(fact.created_at, "createdAt")
                if fact.created_at
                else iso_utc(self._engine.now())
            )
            supersedes = check_gno_uris(list(fact.supersedes), "supersedes")
            workbench = check_workbench(fact.workbench)
        except FieldError as exc:
            raise _refuse(position, str(exc)) from exc
        record_id = fact.record_id or self._engine.new_record_id()
        if record_id in self._known:
            raise _refuse(position, f"record id {record_id} is already in use")
        self._known.add(record_id)
        docid = (
            fact.docid
            if fact.docid and fact.docid not in self._taken
            else allocate_docid(None, record_id=record_id, taken=self._taken)
        )
        self._taken.add(docid)
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
        if self._files is not None and f"{record_id}.md" in _names_in(
            self._on_disk, _day_folder(self._day_folders, root, day)
        ):
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
        if self._files is not None:
            self._files.stage(item)
        item.content = b""  # staged (or not needed: the server mode has no files)
        self._inserts.add(item)
        self._planned += 1
        if self._collect:
            self.report.added.append(record_id)
        return record_id

    def look_up(self, digests: Iterable[str]) -> None:
        """The content hashes of facts about to be added, looked up in the store at once (a
        fact added without it is looked up alone)."""
        self._seen.look_up(digests)

    def then(self, write: Callable[[Session], None]) -> None:
        """Run `write` in the transaction of the rows, after the rows of every fact added so
        far are in it (an import's proposals, which name those facts)."""
        self._inserts.then(write)

    def commit(self, also: AlsoWrite | None = None) -> BulkReport:
        """Make every fact durable and visible at once (with what `also` prepares)."""
        then = partial(also, self.report) if also is not None else None
        inserts = self._inserts.done()
        self._open = False
        if inserts is not None:
            _write_all(self._files, durable=self._durable, crash=self._crash, also=then,
                       inserts=inserts)  # fmt: skip
        else:
            if self._files is not None:
                self._files.abandon()  # nothing staged, but close the stager if one started
            if then is not None:
                with Session(self._engine.db, expire_on_commit=False) as db:
                    then()(db)
                    bump_generation(db)
                    db.commit()
        return self.report


class _Feed:
    """The rows' inserts of a bulk write, fed a batch at a time as the write plans its facts;
    started only once there is something to write."""

    def __init__(self, engine: StoreEngine, crash: CrashPoint) -> None:
        self._engine = engine
        self._crash = crash
        self._batch: list[PlannedFact] = []
        self.inserts: RowInserts | None = None

    def _started(self) -> RowInserts:
        if self.inserts is None:
            self.inserts = RowInserts(self._engine, crash=self._crash)
        return self.inserts

    def add(self, item: PlannedFact) -> None:
        self._batch.append(item)
        if len(self._batch) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            self._started().feed(self._batch)
            self._batch = []

    def then(self, write: Callable[[Session], None]) -> None:
        self._flush()
        self._started().then(write)

    def done(self) -> RowInserts | None:
        """Every fact is fed: the inserts to commit (None: nothing to write)."""
        self._flush()
        if self.inserts is not None:
            self.inserts.fed()
        return self.inserts

    def abandon(self) -> None:
        if self.inserts is not None:
            self.inserts.abandon()


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
            files.finish(durable=durable)
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


def _current_holders(engine: StoreEngine, digests: list[str]) -> HeldRows:
    """The current facts holding any of these content hashes: collection, hash, scopes."""
    with Session(engine.db) as session:
        row = tables.FactRow
        return session.execute(
            select(col(row.collection), col(row.content_hash), col(row.scopes)).where(
                col(row.content_hash).in_(digests), visibility.live_clause(row)
            )
        ).all()
