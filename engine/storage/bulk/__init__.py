"""Many adds at once (imports, benchmarks, the demo): the same files and rows as `remember`
with decision add, written under one hold of the write lock, all or nothing. Exact duplicates
(same text, an intersecting scope, same collection, current) are skipped, as a single add would
answer `existing`.

The write phase (docs/decisions.md, "Import safety"):

1. each fact is checked and its file rendered, and the file written into a staging folder
   `<collection root>/.import-<id>/facts/<day>/` (same filesystem as its final place, and
   outside `facts/`, so reindex never sees it) as soon as it is planned, by a child process
   for a large write (engine/storage/bulk/staging.py, engine/storage/bulk/file_stager.py); a bad
   fact later in the batch stops the write and rolls the staged files back;
2. the staged files are made durable (one syncfs for the lot, else an fsync per file);
3. every row, its scopes, its vector and the supersede links (inserted meanwhile, on a thread
   of their own that starts with the first thousand facts planned:
   engine/storage/bulk/rows.py), and whatever the caller writes with them (an import's
   proposals), are committed in one transaction;
4. the staged files are renamed into `facts/<day>/` (a day folder that is new, the staged one
   renamed whole) and the staging folder is removed.

A process killed in 1 to 3 leaves no row and no visible file; one killed in 4 leaves committed
rows whose files wait in the staging folder. `recover_interrupted_writes` settles both, file by
file: a staged file whose row exists is moved into place (rolled forward), any other is deleted
(rolled back). It runs at the start of every bulk write, and is meant for reindex and the
store's open as well. It also removes the `.tmp-*` files a crash inside `write_atomically`
left behind.

`add_many` writes a list; an import feeds a BulkWriter (engine/storage/bulk/writer.py) one
fact at a time as it decides them, so that neither holds every fact: a fact's file is handed
to the stager and its row to the inserts (whose queue is bounded: a writer ahead of the
inserts waits) as soon as it is planned. A full disk at any step fails the write, which then
takes everything back (engine/storage/disk_full.py says it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engine.contract.normalize import content_hash
from engine.storage.bulk.recovery import recover_interrupted_writes
from engine.storage.bulk.rows import PlannedFact, RowInserts
from engine.storage.bulk.writer import (
    AlsoWrite,
    BulkFact,
    BulkReport,
    BulkWriter,
    checked_fact,
    collector_paused,
)

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine

__all__ = [
    "BulkFact",
    "BulkReport",
    "BulkWriter",
    "PlannedFact",
    "RowInserts",
    "add_many",
    "collector_paused",
    "recover_interrupted_writes",
]

# Facts planned between two progress reports (a report per fact cost a terminal bar more than
# the writes).
PROGRESS_EVERY = 250


def add_many(
    engine: StoreEngine,
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
        checked = [checked_fact(f) for f in facts]
        # Each collection looked up once, before the lock: an unknown one writes nothing.
        for name in {f.collection for f in facts}:
            engine.require_collection(name)
        with BulkWriter(engine, expected=len(facts), durable=durable) as writer:
            writer.look_up(
                fact.content_hash or content_hash(valid[0])
                for fact, valid in zip(facts, checked, strict=True)
            )
            for position, (fact, valid) in enumerate(zip(facts, checked, strict=True)):
                if progress and position % PROGRESS_EVERY == 0:
                    progress(position, len(checked))
                writer.add(fact, checked=valid)
            if progress:
                progress(len(checked), len(checked))
            return writer.commit(also)
