"""import and export (docs/contract.md section 9, issue "OB1 interop").

An import is all-or-nothing: every item is checked before anything is written; then every
current fact goes through the dedup of section 5 (exact duplicates skipped, likely duplicates
queued as proposals for a person, the rest added), a batch at a time
(engine/interop/import_run.py). Facts that are history in their source (superseded there)
are restored as they were, with their chain. Export writes the whole store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.contract.normalize import iso_utc
from engine.contract.validation import ensure_valid
from engine.interop.import_report import ImportReport
from engine.interop.import_run import MAX_SOURCE_BYTES, run_import
from engine.interop.ob1 import ob1_memory, ob1_response
from engine.storage.queries import interop as interop_queries
from engine.storage.reads.records import public_fact
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

EXPORT_FORMATS = ("jsonl", "ob1", "gno")
# The import lives in engine/interop/import_run.py; these names stay here for its callers.
__all__ = [
    "EXPORT_FORMATS",
    "MAX_SOURCE_BYTES",
    "ImportReport",
    "export_gno",
    "export_jsonl_items",
    "export_ob1",
    "run_import",
]


# -- export -------------------------------------------------------------------------------


def _all_rows(engine: MemoryEngine) -> list[tables.FactRow]:
    with engine.session(expire_on_commit=False) as session:
        return interop_queries.all_facts(session)


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
        engine.store.copy_fact_file(engine, row, target)
    return len(rows)
