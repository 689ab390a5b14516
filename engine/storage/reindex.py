"""reindex: make the index agree with the fact files, which are canonical.

It diffs rather than wipes, so its report says what was actually out of line ("changed: 0"
after a healthy run), and receipts, proposals and the decision log are left alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from engine.contract.normalize import fact_uri, parse_iso
from engine.storage import tables
from engine.storage.database import bump_generation
from engine.storage.factfiles import FactFileError, iter_fact_paths, parse_fact_file
from engine.storage.records import allocate_docid, row_from_file, scope_rows

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

# Fields that define a row; a difference in any of them means the row is rewritten.
_COMPARED = (
    "docid",
    "uri",
    "collection",
    "rel_path",
    "text",
    "content_hash",
    "scopes",
    "caller",
    "session",
    "created_at",
    "source",
    "supersedes",
    "superseded_by",
    "retired_at",
    "retired_by",
    "retired_reason",
    "expires_at",
    "workbench",
    "kv_namespace",
    "kv_key",
    "kv_revision",
    "kv_topic",
    "kv_tags",
    "kv_occurred_at_ms",
)


def _rows_from_files(
    engine: MemoryEngine, problems: list[str], progress: Callable[[int, int], None] | None
) -> dict[str, tables.FactRow]:
    found: dict[str, tables.FactRow] = {}
    paths = [
        (name, row.root, path)
        for name, row in sorted(engine.collections_by_name().items())
        for path in iter_fact_paths(Path(row.root))
    ]
    taken: set[str] = set()
    pending_docids: list[tuple[tables.FactRow, str]] = []
    for done, (collection, root, path) in enumerate(paths, start=1):
        rel_path = str(path.relative_to(root))
        try:
            fact = parse_fact_file(path.read_text(encoding="utf-8"), where=str(path))
            parse_iso(fact.created_at)
        except (FactFileError, OSError, ValueError) as exc:
            problems.append(str(exc))
            continue
        day = rel_path.split("/")[1]
        uri = fact_uri(collection, day, fact.record_id)
        docid = fact.workbench.get("docid")
        row = row_from_file(
            fact,
            collection=collection,
            uri=uri,
            rel_path=rel_path,
            docid=docid if isinstance(docid, str) else "",
        )
        if row.docid and row.docid not in taken:
            taken.add(row.docid)
        else:
            pending_docids.append((row, fact.record_id))
        found[fact.record_id] = row
        if progress:
            progress(done, len(paths))
    for row, record_id in pending_docids:  # files without a docid of their own (e.g. GNO's)
        row.docid = allocate_docid(None, record_id=record_id, taken=taken)
        taken.add(row.docid)
    # Supersession is derived from the successors' relations, oldest successor first.
    by_uri = {row.uri: row for row in found.values()}
    for row in sorted(found.values(), key=lambda r: (r.created_at, r.record_id)):
        for uri in row.supersedes:
            predecessor = by_uri.get(uri)
            if predecessor is not None and predecessor.superseded_by is None:
                predecessor.superseded_by = row.record_id
                predecessor.superseded_at = row.created_at
    return found


def _same(left: tables.FactRow, right: tables.FactRow) -> bool:
    return all(getattr(left, name) == getattr(right, name) for name in _COMPARED)


def reindex(
    engine: MemoryEngine, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Rebuild the facts and their scopes from the files; `progress(done, total)` per file."""
    problems: list[str] = []
    with engine.write_lock():
        engine._sync_collections_from_file()
        wanted = _rows_from_files(engine, problems, progress)
        with Session(engine.db, expire_on_commit=False) as session:
            indexed = {row.record_id: row for row in session.scalars(select(tables.FactRow))}
            removed = [rid for rid in indexed if rid not in wanted]
            added = [rid for rid in wanted if rid not in indexed]
            changed = [
                rid for rid in wanted if rid in indexed and not _same(wanted[rid], indexed[rid])
            ]
            stale = removed + changed
            if stale:
                session.execute(
                    delete(tables.FactScopeRow).where(tables.FactScopeRow.record_id.in_(stale))
                )
                session.execute(delete(tables.FactRow).where(tables.FactRow.record_id.in_(stale)))
                session.flush()
            for record_id in added + changed:
                session.add(wanted[record_id])
            session.flush()
            for record_id in added + changed:
                session.add_all(scope_rows(wanted[record_id]))
            if stale or added:
                bump_generation(session)
            session.commit()
    return {
        "files": len(wanted) + len(problems),
        "indexed": len(wanted),
        "added": len(added),
        "changed": len(changed),
        "removed": len(removed),
        "problems": problems,
    }
