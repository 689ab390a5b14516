"""`gno-tui import`, a batch at a time (docs/contract.md section 9).

An import is all-or-nothing, and its memory is bounded by its batch, not by its file:

1. **Check.** Every item of the source is read and checked (the fields, remember's
   validation, the collection, record ids used twice) before anything is written; the first
   bad item is `MEMORY_IMPORT_INVALID`, naming its file and line. This pass keeps only counts:
   how many items, and how many in each group (a target collection and a scope) that the
   dedup compares within. A source with no item at all is refused too.
2. **Import.** The source is read again, IMPORT_BATCH items at a time: each batch is embedded,
   asked for its store candidates and decided in file order (engine/interop/import_plan.py:
   exact duplicates skipped, likely ones held for review, the rest added), and every fact
   decided is handed to one bulk write (engine/storage/bulk/__init__.py) under one hold of the write
   lock, its proposals queued in the same transaction; nothing of the batch is kept after it
   but what later decisions need. The write commits once the whole source is imported; any
   failure before takes all of it back.

Facts that are history in their source (superseded there) are restored as they were, with
their chain, without dedup. A full disk at any point answers `MEMORY_SYNC_FAILED` and says
where (engine/storage/disk_full.py)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import (
    MAX_TEXT_BYTES,
    check_collection_name,
    check_utf8,
    clean_text,
    content_hash,
    is_record_id,
    normalize_scopes,
)
from engine.interop.earlier_pairs import GroupKey
from engine.interop.formats import Incoming, detect_format
from engine.interop.import_plan import ImportPlanner, Verdict, group_keys
from engine.interop.import_proposals import (
    PublicFacts,
    encoded_candidates,
    ensure_results_valid,
    proposal_candidates,
)
from engine.interop.import_report import ImportReport
from engine.interop.import_source import ImportSource
from engine.memory.remember import KEYED_MAX_CONTENT_BYTES, RememberRequest
from engine.retrieval.matching import matching_block
from engine.storage.bulk import BulkFact, BulkWriter, collector_paused
from engine.storage.disk_full import disk_full_refusal
from engine.storage.embedded.factfiles import FieldError, check_time
from engine.storage.proposals import pending_writes, queue_proposals
from engine.storage.queries import interop as interop_queries

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

# Items read, embedded and decided at a time.
IMPORT_BATCH = 512
# Items decided between two progress reports.
PROGRESS_EVERY = 250
# An imported fact's free-text evidence (mem0's metadata lands there too): bounded, so that
# its fact file stays far below what a fact file may hold (factfiles.MAX_FACT_FILE_BYTES).
MAX_SOURCE_BYTES = 64 * 1024


def _check(engine: MemoryEngine, item: Incoming, collection: str, known: set[str]) -> None:
    """Every item passes remember's validation before anything is written (the readers in
    formats.py have checked each field's type and shape already)."""
    try:
        # A keyed-API fact (one restored from an export) may be as long as the keyed API allows.
        limit = KEYED_MAX_CONTENT_BYTES if "keyed" in item.workbench else MAX_TEXT_BYTES
        item.text = clean_text(item.text, max_bytes=limit)
        item.scopes = normalize_scopes(item.scopes)
        if collection not in known:  # one query per collection, not one per item
            check_collection_name(collection)
            engine.require_collection(collection)
            known.add(collection)
        if item.created_at is not None:
            item.created_at = check_time(item.created_at, "createdAt")
        if item.source is not None:
            item.source = check_utf8(item.source, "source")
        if item.source is not None and len(item.source.encode("utf-8")) > MAX_SOURCE_BYTES:
            raise MemoryFailure(
                "MEMORY_IMPORT_INVALID",
                f"source is {len(item.source.encode('utf-8'))} bytes; at most "
                f"{MAX_SOURCE_BYTES} are kept with a fact. Shorten it.",
            )
        if item.record_id is not None and not is_record_id(item.record_id):
            raise MemoryFailure(
                "MEMORY_IMPORT_INVALID", f"recordId {item.record_id!r} is not mem-<16 hex>"
            )
    except MemoryFailure as failure:
        raise MemoryFailure(
            "MEMORY_IMPORT_INVALID", f"{item.where}: {failure.message} Nothing was imported."
        ) from failure
    except FieldError as exc:
        raise MemoryFailure(
            "MEMORY_IMPORT_INVALID", f"{item.where}: {exc}. Nothing was imported."
        ) from exc


@dataclass
class _Import:
    """One import's settings and what its check pass found."""

    engine: MemoryEngine
    source: ImportSource
    collection: str | None
    caller: str
    known: set[str]  # the store's record ids
    checked: set[str] = field(default_factory=set)  # collections known to exist
    on_disk: dict[str, Path] | None = None  # unindexed fact files by record id, when needed
    total: int = 0
    sizes: dict[GroupKey, int] = field(default_factory=dict)

    def target(self, item: Incoming) -> str:
        return self.collection or item.collection or "memory"

    def settled(self, item: Incoming) -> tuple[str, str] | None:
        """(action, reason) for an item decided without dedup, else None."""
        if item.record_id and item.record_id in self.known:
            return ("skip", f"{item.record_id} is already in the store")
        if item.record_id and item.record_id in self.unindexed():
            return (
                "skip",
                f"{self.unindexed()[item.record_id]} holds {item.record_id} but is not in the "
                "index; run `gno-tui reindex` to index it",
            )
        if item.superseded:
            return ("add", "history (superseded in the source)")
        return None

    def unindexed(self) -> dict[str, Path]:
        """Fact files on disk that the index does not know, by record id (asked only when an
        item carries one)."""
        if self.on_disk is None:
            self.on_disk = self.engine.store.fact_files_on_disk(self.engine)
        return self.on_disk

    def items(self) -> Iterator[Incoming]:
        """The source's items, each checked (a reading of the source)."""
        for item in self.source.items():
            _check(self.engine, item, self.target(item), self.checked)
            yield item


def run_import(
    engine: MemoryEngine,
    path: Path,
    *,
    fmt: str | None = None,
    scopes: list[str] | None = None,
    collection: str | None = None,
    dry_run: bool = False,
    caller: str = "import",
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    with collector_paused():
        fmt = fmt or detect_format(path)
        job = _Import(
            engine, ImportSource(path, fmt, scopes or []), collection, caller,
            _known_record_ids(engine),
        )  # fmt: skip
        _check_all(job)
        report = ImportReport(fmt, str(path), dry_run)
        if dry_run:
            _import_all(job, report, None, progress)
            return report
        try:
            with BulkWriter(engine, expected=job.total, collect=False) as writer:
                _import_all(job, report, writer, progress)
                job.source.unchanged()
                writer.commit()
            engine.index_after_bulk()
        except Exception as exc:  # a full disk is said as such; anything else as it was
            refusal = disk_full_refusal(
                exc, engine.home, "Nothing was imported; free some space there (or move the "
                "home with --home), then run the import again", reword=True
            )  # fmt: skip
            if refusal is None:
                raise
            raise refusal from exc
        return report


def _check_all(job: _Import) -> None:
    """The check pass: every item checked, record ids used twice refused, and the groups the
    dedup compares within counted. Errors come in the order the whole-file reading gave
    them: a field a reader refuses first, then a value remember refuses, then a repeated id."""
    # record id -> where the first item with it is (its line number when it is file:line)
    first_use: dict[str, int | str] = {}
    prefix = f"{job.source.path}:"
    refusal: MemoryFailure | None = None
    repeated: MemoryFailure | None = None
    number = 0
    for item in job.source.items():
        number += 1
        if refusal is not None:
            continue  # only reading on: a field refused by a reader comes first
        try:
            _check(job.engine, item, job.target(item), job.checked)
        except MemoryFailure as failure:
            refusal = failure
            continue
        if item.record_id is not None:
            if item.record_id in first_use and repeated is None:
                first = first_use[item.record_id]
                repeated = MemoryFailure(
                    "MEMORY_IMPORT_INVALID",
                    f"{item.where}: recordId {item.record_id} is also the recordId of "
                    f"{f'{prefix}{first}' if isinstance(first, int) else first}; a record id "
                    "names one fact. Drop one of them, or drop its recordId to give it a new "
                    "one. Nothing was imported.",
                )
            line = item.where.removeprefix(prefix)
            compact = line.isascii() and line.isdigit() and f"{prefix}{int(line)}" == item.where
            first_use.setdefault(item.record_id, int(line) if compact else item.where)
        if job.settled(item) is None:
            for key in group_keys(item.scopes, job.target(item)):
                job.sizes[key] = job.sizes.get(key, 0) + 1
    if refusal is not None:
        raise refusal
    if repeated is not None:
        raise repeated
    if number == 0:
        raise MemoryFailure(
            "MEMORY_IMPORT_INVALID",
            f"{job.source.path}: holds no items (it is empty, or only blank lines, or an empty "
            "list). Nothing was imported; check the path, or the export that made the file.",
        )
    job.total = number


def _batches(items: Iterator[Incoming]) -> Iterator[list[Incoming]]:
    batch: list[Incoming] = []
    for item in items:
        batch.append(item)
        if len(batch) == IMPORT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _import_all(
    job: _Import,
    report: ImportReport,
    writer: BulkWriter | None,
    progress: Callable[[int, int], None] | None,
) -> None:
    """The import pass: each batch decided and written (with a writer) in file order."""
    engine = job.engine
    status = engine.embedder_status
    planner = ImportPlanner(engine, sizes=job.sizes, now=engine.now())
    proposals = _Proposals(
        engine.now(), matching_block(status.embedder, status.unavailable_reason), job.source.path
    )
    done = 0
    for batch in _batches(job.items()):
        targets = [job.target(item) for item in batch]
        settled = [job.settled(item) for item in batch]
        numbers = list(range(done, done + len(batch)))
        blocks = planner.batch(
            numbers,
            [item.text for item in batch],
            [item.scopes for item in batch],
            targets,
            [decided is None for decided in settled],
        )
        held: list[tuple[Incoming, str, Verdict]] = []
        if writer is not None:
            writer.look_up(content_hash(item.text) for item in batch)
        for row, item in enumerate(batch):
            if progress and (done + row) % PROGRESS_EVERY == 0:
                progress(done + row, job.total)
            verdict: Verdict | None = None
            digest: str | None = None
            without_dedup = settled[row]
            if without_dedup is None:
                verdict, digest = planner.decide(numbers[row])
                action, reason = verdict.action, verdict.reason
            else:
                action, reason = without_dedup
            record_id = None
            if action == "add" and writer is not None:
                record_id = writer.add(_fact(job, item, targets[row], blocks[row], digest))
                if record_id is None:  # the write's own exact check: an earlier item's text
                    action, reason = "skip", "exact duplicate within the file"
            if verdict is not None:
                planner.settle(numbers[row], record_id=record_id)
            report.actions.append(item.where, action, reason)
            if action == "propose" and verdict is not None:
                held.append((item, targets[row], verdict))
        if held and writer is not None:
            planner.complete()
            writer.then(partial(proposals.queue, held, job.caller))
        done += len(batch)
        # The cyclic collector is paused for the import (bulk.collector_paused), but the
        # statements SQLAlchemy builds for each batch's queries hold cycles: left to the end,
        # they kept every batch's proposal texts. A young-generation pass walks only what the
        # batch made.
        gc.collect(0)
    if progress:
        progress(done, job.total)


def _fact(job: _Import, item: Incoming, target: str, block: Any, digest: str | None) -> BulkFact:
    return BulkFact(
        text=item.text,
        scopes=item.scopes,
        caller=item.caller or job.caller,
        session=item.session or f"import:{job.source.path.name}",
        collection=target,
        source=item.source,
        created_by="import",
        workbench=item.workbench,
        record_id=item.record_id,
        created_at=item.created_at,
        docid=item.docid,
        supersedes=_retarget(item.supersedes, target),
        history=item.superseded,
        block=block,
        content_hash=digest,
    )


class _Proposals:
    """An import's likely duplicates, queued a batch at a time in the transaction that writes
    the facts (after the facts they name): a crash leaves both or neither."""

    def __init__(self, now: Any, matching: dict[str, Any], path: Path) -> None:
        self._now = now
        self._matching = matching
        self._path = path
        self._facts = PublicFacts()
        # The writes waiting in the review queue, read at the first batch that queues any
        # and kept (the import holds the write lock throughout): see queue_proposals.
        self._waiting: set[tuple[Any, ...]] | None = None

    def queue(self, held: list[tuple[Incoming, str, Verdict]], caller: str, db: Any) -> None:
        """`db`: the bulk write's transaction (BulkWriter.then), handed on to the query
        helpers and the review queue, untyped as the domain modules name no SQLAlchemy type."""
        named = {e.record_id for _, _, verdict in held for e in verdict.earlier if e.record_id}
        written = self._facts.written(partial(interop_queries.facts_by_record_ids, db), named)
        queued, chosen = [], []
        for item, target, verdict in held:
            chosen.append(proposal_candidates(verdict, self._facts, written))
            result = {
                "outcome": "candidates",
                "matching": self._matching,
                "candidates": encoded_candidates(chosen[-1]),
            }
            request = RememberRequest(
                text=item.text,
                scopes=item.scopes,
                caller=item.caller or caller,
                session=item.session or f"import:{self._path.name}",
                source=item.source,
                collection=target,
            )
            queued.append((request, item.text, item.scopes, target, "add", result))
        ensure_results_valid(self._matching, chosen)
        if self._waiting is None:
            self._waiting = pending_writes(db)
        queue_proposals(db, now=self._now, items=queued, origin="import", waiting=self._waiting)


def _retarget(uris: list[str], collection: str) -> list[str]:
    """A predecessor URI names its collection; an import into another collection follows."""
    out = []
    for uri in uris:
        _, _, tail = uri.removeprefix("gno://").partition("/")
        out.append(f"gno://{collection}/{tail}" if tail else uri)
    return out


def _known_record_ids(engine: MemoryEngine) -> set[str]:
    with engine.session() as session:
        return interop_queries.all_record_ids(session)
