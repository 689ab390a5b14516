"""import and export (docs/contract.md section 9, issue "OB1 interop").

An import is all-or-nothing: the whole file is read and checked first; then every current
fact goes through the dedup of section 5 (exact duplicates skipped, likely duplicates queued
as proposals for a person, the rest added). Facts that are history in their source
(superseded there) are restored as they were, with their chain."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import (
    MAX_TEXT_BYTES,
    check_collection_name,
    check_utf8,
    clean_text,
    is_record_id,
    iso_utc,
    normalize_scopes,
)
from engine.contract.validation import ensure_valid
from engine.interop.formats import Incoming, detect_format, read_incoming
from engine.interop.import_plan import Verdict, plan_import
from engine.interop.import_proposals import (
    PublicFacts,
    encoded_candidates,
    ensure_results_valid,
    proposal_candidates,
    record_ids,
)
from engine.interop.ob1 import ob1_memory, ob1_response
from engine.memory.remember import KEYED_MAX_CONTENT_BYTES, RememberRequest
from engine.retrieval.matching import matching_block
from engine.storage import tables
from engine.storage.bulk import BulkFact, BulkReport, add_many, collector_paused
from engine.storage.fact_sink import fact_file_of
from engine.storage.factfiles import FieldError, check_time, iter_fact_paths, write_atomically
from engine.storage.proposals import queue_proposals
from engine.storage.records import public_fact

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

EXPORT_FORMATS = ("jsonl", "ob1", "gno")
# An imported fact's free-text evidence (mem0's metadata lands there too): bounded, so that
# its fact file stays far below what a fact file may hold (factfiles.MAX_FACT_FILE_BYTES).
MAX_SOURCE_BYTES = 64 * 1024


@dataclass
class ImportReport:
    format: str
    file: str
    dry_run: bool
    actions: list[dict[str, Any]] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for a in self.actions if a["action"] == action)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "file": self.file,
            "dryRun": self.dry_run,
            "items": len(self.actions),
            "added": self.count("add"),
            "skipped": self.count("skip"),
            "proposed": self.count("propose"),
            "actions": self.actions,
        }


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


def _refuse_repeated_ids(items: list[Incoming]) -> None:
    """Two items with one recordId would be one file written twice: refused, naming both."""
    first: dict[str, str] = {}
    for item in items:
        if item.record_id is None:
            continue
        if item.record_id in first:
            raise MemoryFailure(
                "MEMORY_IMPORT_INVALID",
                f"{item.where}: recordId {item.record_id} is also the recordId of "
                f"{first[item.record_id]}; a record id names one fact. Drop one of them, or "
                "drop its recordId to give it a new one. Nothing was imported.",
            )
        first[item.record_id] = item.where


def _unindexed_files(engine: MemoryEngine, items: list[Incoming]) -> dict[str, Path]:
    """Fact files on disk that the index does not know, by record id, when items carry ids."""
    if not engine.files_canonical or not any(item.record_id for item in items):
        return {}  # in the server mode no file counts: the rows are the facts
    return {
        path.stem: path
        for row in engine.collections_by_name().values()
        for path in iter_fact_paths(Path(row.root))
    }


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
        return _run_import(engine, path, fmt, scopes, collection, dry_run, caller, progress)


def _run_import(
    engine: MemoryEngine,
    path: Path,
    fmt: str | None,
    scopes: list[str] | None,
    collection: str | None,
    dry_run: bool,
    caller: str,
    progress: Callable[[int, int], None] | None,
) -> ImportReport:
    fmt = fmt or detect_format(path)
    items = read_incoming(path, fmt, scopes or [])
    checked_collections: set[str] = set()
    for item in items:
        _check(engine, item, collection or item.collection or "memory", checked_collections)
    _refuse_repeated_ids(items)
    report = ImportReport(fmt, str(path), dry_run)
    known = _known_record_ids(engine)
    on_disk = _unindexed_files(engine, items)
    status = engine.embedder_status
    targets = [collection or item.collection or "memory" for item in items]
    settled: dict[int, tuple[str, str]] = {}  # item -> (action, reason) known without dedup
    for position, item in enumerate(items):
        if item.record_id and item.record_id in known:
            settled[position] = ("skip", f"{item.record_id} is already in the store")
        elif item.record_id and item.record_id in on_disk:
            settled[position] = (
                "skip",
                f"{on_disk[item.record_id]} holds {item.record_id} but is not in the index; "
                "run `gno-tui reindex` to index it",
            )
        elif item.superseded:
            settled[position] = ("add", "history (superseded in the source)")
    planned = plan_import(
        engine,
        [item.text for item in items],
        [item.scopes for item in items],
        targets,
        [position not in settled for position in range(len(items))],
        engine.now(),
    )
    to_add: list[BulkFact] = []
    added_as: dict[int, int] = {}  # item -> its position in to_add
    proposals: list[tuple[int, Verdict]] = []
    for position, item in enumerate(items):
        verdict = planned.verdicts[position]
        if position in settled:
            action, reason = settled[position]
        else:
            assert verdict is not None  # every item not settled was decided
            action, reason = verdict.action, verdict.reason
        report.actions.append({"where": item.where, "action": action, "reason": reason})
        if action == "propose" and verdict is not None:
            proposals.append((position, verdict))
        if action != "add":
            continue
        added_as[position] = len(to_add)
        to_add.append(
            BulkFact(
                text=item.text,
                scopes=item.scopes,
                caller=item.caller or caller,
                session=item.session or f"import:{path.name}",
                collection=targets[position],
                source=item.source,
                created_by="import",
                workbench=item.workbench,
                record_id=item.record_id,
                created_at=item.created_at,
                docid=item.docid,
                supersedes=_retarget(item.supersedes, targets[position]),
                history=item.superseded,
                block=planned.blocks[position],
                content_hash=planned.digests[position],
            )
        )
    if dry_run:
        return report

    def queue_likely_duplicates(outcome: BulkReport) -> Callable[[Session], None]:
        """The proposals, made while the facts' rows are inserted and queued in the
        transaction that commits them: a crash leaves both or neither."""
        record_of = record_ids(len(to_add), outcome)
        # The facts being written, as the index will hold them: the earlier items proposals
        # name.
        shaped = PublicFacts({row.record_id: row for row in outcome.rows})
        matching = matching_block(status.embedder, status.unavailable_reason)
        queued, chosen = [], []
        for position, verdict in proposals:
            item = items[position]
            chosen.append(proposal_candidates(verdict, added_as, record_of, shaped))
            result = {
                "outcome": "candidates",
                "matching": matching,
                "candidates": encoded_candidates(chosen[-1]),
            }
            request = RememberRequest(
                text=item.text,
                scopes=item.scopes,
                caller=item.caller or caller,
                session=item.session or f"import:{path.name}",
                source=item.source,
                collection=targets[position],
            )
            queued.append((request, item.text, item.scopes, targets[position], "add", result))
        ensure_results_valid(matching, chosen)
        return partial(queue_proposals, now=engine.now(), items=queued, origin="import")

    outcome = add_many(
        engine, to_add, progress=progress, also=queue_likely_duplicates if proposals else None
    )
    skipped = set(outcome.skipped)
    for position, entry in enumerate(report.actions):
        if position in added_as and added_as[position] in skipped:
            entry["action"], entry["reason"] = "skip", "exact duplicate within the file"
    return report


def _retarget(uris: list[str], collection: str) -> list[str]:
    """A predecessor URI names its collection; an import into another collection follows."""
    out = []
    for uri in uris:
        _, _, tail = uri.removeprefix("gno://").partition("/")
        out.append(f"gno://{collection}/{tail}" if tail else uri)
    return out


def _known_record_ids(engine: MemoryEngine) -> set[str]:
    with Session(engine.db) as session:
        return set(session.scalars(select(tables.FactRow.record_id)))


# -- export -------------------------------------------------------------------------------


def _all_rows(engine: MemoryEngine) -> list[tables.FactRow]:
    with Session(engine.db, expire_on_commit=False) as session:
        return list(
            session.scalars(
                select(tables.FactRow).order_by(tables.FactRow.created_at, tables.FactRow.record_id)
            )
        )


def export_jsonl_items(engine: MemoryEngine) -> list[dict[str, Any]]:
    items = []
    for row in _all_rows(engine):
        item = {
            **public_fact(row),
            "collection": row.collection,
            "workbench": {k: v for k, v in row.workbench.items() if k != "docid"},
        }
        if row.superseded_by:
            item["supersededBy"] = row.superseded_by
        items.append(item)
    return items


def export_ob1(engine: MemoryEngine) -> dict[str, Any]:
    rows = _all_rows(engine)
    uri_of = {row.record_id: row.uri for row in rows}
    memories = [
        ob1_memory(
            public_fact(row),
            collection=row.collection,
            workbench=row.workbench,
            superseded_by=uri_of.get(row.superseded_by or ""),
        )
        for row in rows
    ]
    return ensure_valid("ob1_recall", ob1_response(f"export-{iso_utc(engine.now())}", memories))


def export_gno(engine: MemoryEngine, output: Path) -> int:
    """The facts as a GNO fact folder in `output`: the canonical files copied (embedded
    mode), or each row rendered as the file the embedded mode would have written (server
    mode: a mirror, engine/storage/fact_sink.py)."""
    rows = _all_rows(engine)
    for row in rows:
        target = output / row.rel_path
        target.parent.mkdir(parents=True, exist_ok=True)
        if engine.files_canonical:
            shutil.copy2(engine.collection_root(row.collection) / row.rel_path, target)
        else:
            write_atomically(target, fact_file_of(row).render())
    return len(rows)
